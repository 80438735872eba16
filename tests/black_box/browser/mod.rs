//! A real browser for the black-box tests: Debian's Chromium, headless, driven through
//! chromedriver with the `fantoccini` crate.
//!
//! Why fantoccini: it is the maintained WebDriver client of the Rust ecosystem (W3C
//! WebDriver, the protocol chromedriver, geckodriver and every browser vendor support), it is
//! small (hyper with a plain HTTP connector: chromedriver listens on the loopback, so no TLS
//! stack is linked), and it runs on tokio, which the tests already use. A Chrome DevTools
//! Protocol crate (chromiumoxide, headless_chrome) would tie the tests to one browser and
//! compile thousands of generated protocol types for the dozen commands used here.
//!
//! Invariants:
//! - the browser cannot be driven (chromedriver missing, session refused) → the test fails,
//!   never skips: `scripts/test` installs `chromium` and `chromium-driver`;
//! - every browser gets a fresh profile in a temporary directory and the flags that keep
//!   Chromium from calling out to the network (this machine's network is closed: without
//!   them it hangs on start);
//! - every wait is bounded by [`WAIT_TIMEOUT`]; a wait that times out saves a screenshot and
//!   the page's HTML beside the other artefacts before it fails.

#![allow(dead_code, clippy::unwrap_used)]

pub mod npm_packages;
pub mod static_server;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};

/// Debian's Chromium (package `chromium`).
pub const CHROMIUM: &str = "/usr/bin/chromium";
/// Debian's chromedriver (package `chromium-driver`).
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// How long a test waits for the page to reach a state before it fails.
pub const WAIT_TIMEOUT: Duration = Duration::from_secs(30);
/// The pause between two looks at the page.
const POLL_INTERVAL: Duration = Duration::from_millis(50);
/// How long chromedriver may take to listen.
const DRIVER_START_TIMEOUT: Duration = Duration::from_secs(20);
/// The browser window, large enough for the screenshots to show the whole result list.
const WINDOW_SIZE: &str = "--window-size=1280,900";
/// Chromium's flags: headless, and nothing that calls out to the network or waits for it.
const CHROMIUM_FLAGS: [&str; 9] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
];

/// The target directory: the server binary is `<target>/<profile>/coresearch`.
pub fn target_directory() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_coresearch"))
        .ancestors()
        .nth(2)
        .expect("the binary lies two levels under the target directory")
        .to_path_buf()
}

/// Where a test keeps its screenshots: `target/test-artifacts/dashboard/`.
pub fn artifacts_directory() -> PathBuf {
    let directory = target_directory().join("test-artifacts").join("dashboard");
    std::fs::create_dir_all(&directory).expect("the artefacts directory can be created");
    directory
}

/// A headless Chromium driven through its own chromedriver; both end when it is dropped.
pub struct Browser {
    pub client: Client,
    driver: Child,
    _profile: tempfile::TempDir,
    /// Names the artefacts of this browser (`<name>-<step>.png`).
    name: String,
}

impl Browser {
    /// Starts chromedriver on a free port and opens a browser session with a fresh profile.
    pub async fn start(name: &str) -> Browser {
        for program in [CHROMIUM, CHROMEDRIVER] {
            assert!(
                Path::new(program).exists(),
                "{program} is missing: install Debian's `chromium` and `chromium-driver` \
                 (scripts/test does)"
            );
        }
        let address = free_address();
        let log = artifacts_directory().join(format!("{name}-chromedriver.log"));
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={}", address.port()))
            .arg(format!("--log-path={}", log.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        wait_until_listening(address);
        let profile = tempfile::tempdir().expect("tempdir succeeds");
        let client = connect(address, profile.path()).await;
        Browser {
            client,
            driver,
            _profile: profile,
            name: name.to_owned(),
        }
    }

    /// Opens `url`.
    pub async fn open(&self, url: &str) {
        self.client.goto(url).await.expect("the page opens");
    }

    /// Runs `script` (a function body that may `return` a JSON value) in the page.
    pub async fn evaluate(&self, script: &str) -> Value {
        self.client
            .execute(script, Vec::new())
            .await
            .expect("the script runs")
    }

    /// Evaluates `script` until `accept` takes its value; fails after [`WAIT_TIMEOUT`],
    /// saving the page as `<name>-failure.png` and `.html`, with `what` and the last value.
    pub async fn wait_for(
        &self,
        what: &str,
        script: &str,
        accept: impl Fn(&Value) -> bool,
    ) -> Value {
        let started = Instant::now();
        loop {
            let value = self.evaluate(script).await;
            if accept(&value) {
                return value;
            }
            if started.elapsed() > WAIT_TIMEOUT {
                self.save_failure().await;
                panic!("waited {WAIT_TIMEOUT:?} for {what}; the page shows {value:#}");
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    /// Types `text` into the element `css` finds, as keystrokes.
    pub async fn type_into(&self, css: &str, text: &str) {
        let element = self.find(css).await;
        element.send_keys(text).await.expect("the keys are typed");
    }

    /// Clears the text field `css` finds.
    pub async fn clear(&self, css: &str) {
        self.find(css)
            .await
            .clear()
            .await
            .expect("the field clears");
    }

    /// Clicks the element `css` finds.
    pub async fn click(&self, css: &str) {
        self.find(css).await.click().await.expect("the click lands");
    }

    /// Chooses the option of value `value` in the `<select>` `css` finds.
    pub async fn select(&self, css: &str, value: &str) {
        self.find(css)
            .await
            .select_by_value(value)
            .await
            .expect("the option is chosen");
    }

    /// The element `css` finds, waiting for it to exist.
    pub async fn find(&self, css: &str) -> fantoccini::elements::Element {
        let started = Instant::now();
        loop {
            match self.client.find(Locator::Css(css)).await {
                Ok(element) => return element,
                Err(error) if started.elapsed() > WAIT_TIMEOUT => {
                    self.save_failure().await;
                    panic!("no element matches {css}: {error}");
                }
                Err(_) => tokio::time::sleep(POLL_INTERVAL).await,
            }
        }
    }

    /// Saves a screenshot of the window as `<name>-<step>.png`; answers its path.
    pub async fn screenshot(&self, step: &str) -> PathBuf {
        let png = self
            .client
            .screenshot()
            .await
            .expect("the screenshot is taken");
        assert!(png.starts_with(b"\x89PNG"), "the screenshot is a PNG");
        let path = artifacts_directory().join(format!("{}-{step}.png", self.name));
        std::fs::write(&path, png).expect("the screenshot is saved");
        path
    }

    async fn save_failure(&self) {
        let _ = self.screenshot("failure").await;
        if let Ok(html) = self.client.source().await {
            let path = artifacts_directory().join(format!("{}-failure.html", self.name));
            let _ = std::fs::write(path, html);
        }
    }

    /// Ends the session and chromedriver.
    pub async fn close(mut self) {
        let _ = self.client.clone().close().await;
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Chromium is chromedriver's child: chromedriver ends it when its session ends; a
        // panicking test never closes the session, so chromedriver goes, and Chromium sees
        // its pipe close.
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// A session on the chromedriver at `address` with Chromium, headless, on `profile`.
async fn connect(address: SocketAddr, profile: &Path) -> Client {
    let mut arguments: Vec<String> = CHROMIUM_FLAGS.iter().map(|flag| flag.to_string()).collect();
    arguments.push(WINDOW_SIZE.to_owned());
    arguments.push(format!("--user-data-dir={}", profile.display()));
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".to_owned(),
        json!({ "binary": CHROMIUM, "args": arguments }),
    );
    ClientBuilder::new(HttpConnector::new())
        .capabilities(capabilities)
        .connect(&format!("http://{address}"))
        .await
        .unwrap_or_else(|error| panic!("chromedriver opens no Chromium session: {error}"))
}

fn wait_until_listening(address: SocketAddr) {
    let started = Instant::now();
    while TcpStream::connect(address).is_err() {
        assert!(
            started.elapsed() < DRIVER_START_TIMEOUT,
            "chromedriver did not listen on {address}"
        );
        std::thread::sleep(POLL_INTERVAL);
    }
}

/// A free loopback address.
pub fn free_address() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind succeeds");
    listener.local_addr().expect("local_addr succeeds")
}
