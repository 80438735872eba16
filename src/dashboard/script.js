// The dashboard: plain JavaScript talking to this server's own API with fetch.
//
// Invariants:
// - nothing from the server or the user is ever parsed as HTML: every text goes in through
//   text nodes, and the only elements made from a hit are the <mark> of its highlights,
//   found by highlight tags chosen at random when the page loads;
// - only the answer to the latest search is rendered: a new search aborts the one before,
//   and an answer that arrives after a newer search started is dropped;
// - the API key is kept in localStorage and sent as a bearer token; a 401 or 403 answer
//   asks for a key again.
"use strict";

(() => {
  const SEARCH_DELAY_MILLISECONDS = 120;
  const HITS_PER_SEARCH = 20;
  const INDEXES_LISTED_MAX = 1000;
  const KEY_STORAGE_NAME = "coresearch.dashboard.apiKey";
  const INDEX_STORAGE_NAME = "coresearch.dashboard.indexUid";
  const HIDDEN_HIT_FIELDS = new Set([
    "_formatted", "_matchesPosition", "_rankingScore", "_rankingScoreDetails", "_vectors",
    "_semanticScore", "_geoDistance", "_federation",
  ]);
  const RANDOM_TAG_BYTES = 8;

  const numberFormat = new Intl.NumberFormat("en");
  const highlight = highlightTags();
  const elements = {
    indexChoice: byId("index-choice"),
    picker: byId("index-picker"),
    documentCount: byId("document-count"),
    forgetKey: byId("forget-key"),
    keyForm: byId("key-form"),
    keyMessage: byId("key-message"),
    keyInput: byId("key-input"),
    error: byId("error"),
    workspace: byId("workspace"),
    searchForm: byId("search-form"),
    searchInput: byId("search-input"),
    filterInput: byId("filter-input"),
    facets: byId("facets"),
    results: document.querySelector(".results"),
    summary: byId("summary"),
    hits: byId("hits"),
  };
  const state = {
    indexUid: null,
    // attribute name → Set of the facet values checked for it
    checked: new Map(),
    searchNumber: 0,
    controller: null,
    timer: null,
  };

  function byId(id) {
    return document.getElementById(id);
  }

  // Two tags no document holds: the server wraps highlighted words in them.
  function highlightTags() {
    const bytes = new Uint8Array(RANDOM_TAG_BYTES);
    crypto.getRandomValues(bytes);
    const nonce = Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
    return { pre: `__coresearch_mark_${nonce}__`, post: `__coresearch_end_${nonce}__` };
  }

  function storedItem(name) {
    try {
      return localStorage.getItem(name);
    } catch {
      return null;
    }
  }

  function storeItem(name, value) {
    try {
      if (value === null) localStorage.removeItem(name);
      else localStorage.setItem(name, value);
    } catch {
      // Storage refused (private mode): the value lives as long as the page.
    }
  }

  class ApiError extends Error {
    constructor(status, body, text) {
      const message = body && typeof body.message === "string"
        ? body.message
        : `The server answered ${status}${text ? `: ${text}` : "."}`;
      super(message);
      this.status = status;
      this.code = body && typeof body.code === "string" ? body.code : null;
    }
  }

  async function api(method, path, body, signal) {
    const headers = { Accept: "application/json" };
    const key = storedItem(KEY_STORAGE_NAME);
    if (key) headers.Authorization = `Bearer ${key}`;
    const options = { method, headers, signal };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body);
    }
    const response = await fetch(path, options);
    const text = await response.text();
    let json = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = null;
    }
    if (!response.ok) throw new ApiError(response.status, json, text);
    return json;
  }

  function indexPath(uid, rest) {
    return `/indexes/${encodeURIComponent(uid)}/${rest}`;
  }

  function showError(error) {
    if (error === null) {
      elements.error.hidden = true;
      elements.error.textContent = "";
      return;
    }
    const code = error.code ? ` (${error.code})` : "";
    const prefix = error instanceof ApiError ? "" : "Could not reach the server: ";
    elements.error.textContent = `${prefix}${error.message}${code}`;
    elements.error.hidden = false;
  }

  function askForKey(error) {
    const hadKey = storedItem(KEY_STORAGE_NAME) !== null;
    elements.keyMessage.textContent = hadKey ? `This key was refused: ${error.message}` : "";
    elements.keyMessage.hidden = !hadKey;
    elements.keyForm.hidden = false;
    elements.workspace.hidden = true;
    elements.keyInput.focus();
  }

  // Reports a failed request: a refused key asks for another one, anything else is shown.
  function report(error) {
    if (error && error.name === "AbortError") return;
    if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
      showError(null);
      askForKey(error);
      return;
    }
    showError(error);
  }

  function documentsLabel(count) {
    if (count === null) return "";
    return `${numberFormat.format(count)} document${count === 1 ? "" : "s"}`;
  }

  async function documentCount(uid) {
    const stats = await api("GET", indexPath(uid, "stats"));
    return stats.numberOfDocuments;
  }

  async function loadIndexes() {
    let list;
    try {
      list = await api("GET", `/indexes?limit=${INDEXES_LISTED_MAX}`);
    } catch (error) {
      report(error);
      return;
    }
    showError(null);
    elements.keyForm.hidden = true;
    elements.forgetKey.hidden = storedItem(KEY_STORAGE_NAME) === null;
    const uids = list.results.map((index) => index.uid);
    fillPicker(uids);
    if (uids.length === 0) {
      elements.workspace.hidden = true;
      elements.documentCount.textContent = "No index yet: add documents to create one.";
      return;
    }
    elements.workspace.hidden = false;
    const stored = storedItem(INDEX_STORAGE_NAME);
    selectIndex(uids.includes(stored) ? stored : uids[0]);
    labelPickerWithCounts(uids);
  }

  function fillPicker(uids) {
    const options = uids.map((uid) => {
      const option = document.createElement("option");
      option.value = uid;
      option.textContent = uid;
      return option;
    });
    elements.picker.replaceChildren(...options);
    elements.indexChoice.hidden = uids.length === 0;
  }

  async function labelPickerWithCounts(uids) {
    const counts = await Promise.all(uids.map((uid) => documentCount(uid).catch(() => null)));
    for (const option of elements.picker.options) {
      const count = counts[uids.indexOf(option.value)];
      if (count !== null && count !== undefined) {
        option.textContent = `${option.value} (${documentsLabel(count)})`;
      }
    }
  }

  async function selectIndex(uid) {
    state.indexUid = uid;
    state.checked = new Map();
    elements.picker.value = uid;
    storeItem(INDEX_STORAGE_NAME, uid);
    // A filter names the attributes of one index: it does not follow to another.
    elements.filterInput.value = "";
    elements.facets.replaceChildren();
    elements.hits.replaceChildren();
    elements.summary.textContent = "";
    elements.documentCount.textContent = "";
    search();
    try {
      const count = await documentCount(uid);
      if (state.indexUid === uid) elements.documentCount.textContent = documentsLabel(count);
    } catch (error) {
      report(error);
    }
  }

  function quoted(text) {
    return `"${text.replace(/\\/g, "\\\\").replace(/"/g, "\\\"")}"`;
  }

  // The checked facet values (one OR group per attribute) AND the filter box.
  function filter() {
    const groups = [];
    for (const [attribute, values] of state.checked) {
      if (values.size === 0) continue;
      groups.push(Array.from(values, (value) => `${quoted(attribute)} = ${quoted(value)}`));
    }
    const typed = elements.filterInput.value.trim();
    if (typed) groups.push(typed);
    return groups;
  }

  function searchSoon() {
    clearTimeout(state.timer);
    state.timer = setTimeout(search, SEARCH_DELAY_MILLISECONDS);
  }

  async function search() {
    clearTimeout(state.timer);
    const uid = state.indexUid;
    if (uid === null) return;
    state.searchNumber += 1;
    const number = state.searchNumber;
    if (state.controller) state.controller.abort();
    const controller = new AbortController();
    state.controller = controller;
    const body = {
      q: elements.searchInput.value,
      limit: HITS_PER_SEARCH,
      facets: ["*"],
      attributesToHighlight: ["*"],
      highlightPreTag: highlight.pre,
      highlightPostTag: highlight.post,
    };
    const groups = filter();
    if (groups.length > 0) body.filter = groups;
    elements.results.setAttribute("aria-busy", "true");
    try {
      const result = await api("POST", indexPath(uid, "search"), body, controller.signal);
      if (number !== state.searchNumber) return;
      showError(null);
      renderResult(result);
    } catch (error) {
      if (number === state.searchNumber) report(error);
    } finally {
      if (number === state.searchNumber) elements.results.removeAttribute("aria-busy");
    }
  }

  function renderResult(result) {
    const total = result.estimatedTotalHits ?? result.totalHits ?? result.hits.length;
    const exact = result.totalHits !== undefined ? "" : "about ";
    const shown = result.hits.length < total ? `, the first ${result.hits.length} shown` : "";
    elements.summary.textContent =
      `${exact}${numberFormat.format(total)} result${total === 1 ? "" : "s"}${shown} ` +
      `in ${result.processingTimeMs} ms`;
    elements.hits.replaceChildren(...result.hits.map(renderHit));
    renderFacets(result.facetDistribution || {}, result.facetStats || {});
  }

  function renderHit(hit) {
    const formatted = hit._formatted || {};
    const item = document.createElement("li");
    const fields = document.createElement("dl");
    for (const [name, value] of Object.entries(hit)) {
      if (HIDDEN_HIT_FIELDS.has(name)) continue;
      const term = document.createElement("dt");
      term.textContent = name;
      const description = document.createElement("dd");
      description.append(highlighted(name in formatted ? formatted[name] : value));
      fields.append(term, description);
    }
    item.append(fields);
    return item;
  }

  // A value as text in which only the spans between the highlight tags become <mark>.
  function highlighted(value) {
    const text = typeof value === "string" ? value : JSON.stringify(value);
    const fragment = document.createDocumentFragment();
    let rest = text;
    for (;;) {
      const start = rest.indexOf(highlight.pre);
      const end = start < 0 ? -1 : rest.indexOf(highlight.post, start + highlight.pre.length);
      if (end < 0) {
        fragment.append(rest);
        return fragment;
      }
      const mark = document.createElement("mark");
      mark.textContent = rest.slice(start + highlight.pre.length, end);
      fragment.append(rest.slice(0, start), mark);
      rest = rest.slice(end + highlight.post.length);
    }
  }

  function renderFacets(distribution, stats) {
    const focused = document.activeElement;
    const focusedFacet = focused && focused.dataset && "facetAttribute" in focused.dataset
      ? [focused.dataset.facetAttribute, focused.dataset.facetValue]
      : null;
    const attributes = new Set([...Object.keys(distribution), ...state.checked.keys()]);
    const groups = Array.from(attributes).sort().map(
      (attribute) => renderFacet(attribute, distribution[attribute] || {}, stats[attribute]),
    );
    elements.facets.replaceChildren(...groups);
    if (focusedFacet) {
      for (const box of elements.facets.querySelectorAll("input[type=checkbox]")) {
        if (box.dataset.facetAttribute === focusedFacet[0] &&
          box.dataset.facetValue === focusedFacet[1]) box.focus();
      }
    }
  }

  function renderFacet(attribute, counts, stats) {
    const checked = state.checked.get(attribute) || new Set();
    const entries = Object.entries(counts);
    for (const value of checked) {
      if (!(value in counts)) entries.push([value, 0]);
    }
    const group = document.createElement("fieldset");
    const legend = document.createElement("legend");
    legend.textContent = attribute;
    const list = document.createElement("ul");
    for (const [value, count] of entries) {
      list.append(renderFacetValue(attribute, value, count, checked.has(value)));
    }
    group.append(legend, list);
    if (stats) {
      const range = document.createElement("p");
      range.className = "facet-stats";
      range.textContent = `from ${stats.min} to ${stats.max}`;
      group.append(range);
    }
    return group;
  }

  function renderFacetValue(attribute, value, count, checked) {
    const item = document.createElement("li");
    const label = document.createElement("label");
    const box = document.createElement("input");
    box.type = "checkbox";
    box.checked = checked;
    box.dataset.facetAttribute = attribute;
    box.dataset.facetValue = value;
    box.addEventListener("change", () => toggleFacet(attribute, value, box.checked));
    const name = document.createElement("span");
    name.className = "facet-value";
    name.textContent = value;
    const number = document.createElement("span");
    number.className = "facet-count";
    number.textContent = numberFormat.format(count);
    label.append(box, name, number);
    item.append(label);
    return item;
  }

  function toggleFacet(attribute, value, checked) {
    const values = state.checked.get(attribute) || new Set();
    if (checked) values.add(value);
    else values.delete(value);
    if (values.size === 0) state.checked.delete(attribute);
    else state.checked.set(attribute, values);
    search();
  }

  elements.keyForm.addEventListener("submit", (event) => {
    event.preventDefault();
    storeItem(KEY_STORAGE_NAME, elements.keyInput.value.trim());
    elements.keyInput.value = "";
    loadIndexes();
  });
  elements.forgetKey.addEventListener("click", () => {
    storeItem(KEY_STORAGE_NAME, null);
    elements.forgetKey.hidden = true;
    loadIndexes();
  });
  elements.picker.addEventListener("change", () => selectIndex(elements.picker.value));
  elements.searchForm.addEventListener("submit", (event) => {
    event.preventDefault();
    search();
  });
  elements.searchInput.addEventListener("input", searchSoon);
  elements.filterInput.addEventListener("input", searchSoon);

  loadIndexes();
})();
