//! Front-end packages from the npm registry, without node: each pinned by name, version and
//! the registry's `integrity` (SHA-512 of the tarball), downloaded once into
//! `target/npm-packages/`, checked against its pin on every use, and read straight from the
//! tarball.
//!
//! Invariants: a tarball whose SHA-512 differs from its pin is never used (a cached one is
//! downloaded again, a downloaded one fails the test); a download is written to a temporary
//! name and renamed, so the cache never holds half a file.

use std::io::Read;
use std::path::PathBuf;

use base64::Engine as _;
use sha2::{Digest, Sha512};

/// One pinned npm package.
pub struct Package {
    /// The package's name (`@scope/name` for a scoped one).
    pub name: &'static str,
    pub version: &'static str,
    /// `dist.integrity` in the registry's metadata of this version.
    pub integrity: &'static str,
}

/// Where the registry serves tarballs.
const REGISTRY: &str = "https://registry.npmjs.org";
/// The longest a tarball download may take.
const DOWNLOAD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// InstantSearch.js, whose UMD build (`dist/instantsearch.production.min.js`) defines the
/// global `instantsearch`.
pub const INSTANTSEARCH: Package = Package {
    name: "instantsearch.js",
    version: "4.118.1",
    integrity: "sha512-i5fxbr8Ou/63scNk5fqtf+JdBGWFn4Uge6IXN6iPFNw5XgCt5XX0makU1d8hWy36eIneArJUQl2kHlHoGLAiMQ==",
};
/// Meilisearch's InstantSearch client. This release ships no UMD build: one ES module
/// (`dist/index.js`) that imports its peer `meilisearch`, resolved by an import map.
pub const INSTANT_MEILISEARCH: Package = Package {
    name: "@meilisearch/instant-meilisearch",
    version: "0.31.3",
    integrity: "sha512-bc59iwpKXhCTeD+ndz0ojpAg87BmEoSneD8JRMxMUzJ5ZaDSdt81DJT2Evucdc0nFjFhrdKXF+KAtLwXSEEwdQ==",
};
/// The Meilisearch JavaScript client, the version instant-meilisearch 0.31.3's peer range
/// (`^0.57`) asks for: one ES module (`dist/index.js`) that imports nothing.
pub const MEILISEARCH_JS: Package = Package {
    name: "meilisearch",
    version: "0.57.0",
    integrity: "sha512-J3ZdX6MjguEIG9Yo+duRZeVsbMdRuwM2OFvJUs8wZSeBADYZ2qc1eajlClKLRqS/mAhGh2bLiU5SbmhKXKuWSw==",
};

impl Package {
    /// The tarball's file name, as the registry names it (`instant-meilisearch-0.31.3.tgz`).
    fn file_name(&self) -> String {
        let unscoped = self.name.rsplit('/').next().expect("rsplit yields once");
        format!("{unscoped}-{}.tgz", self.version)
    }

    fn cache_path(&self) -> PathBuf {
        let directory = super::target_directory().join("npm-packages");
        std::fs::create_dir_all(&directory).expect("the package cache can be created");
        directory.join(self.file_name())
    }

    /// The file at `path` inside the package (`dist/index.js`), from the checked tarball.
    pub async fn file(&self, path: &str) -> Vec<u8> {
        let tarball = self.tarball().await;
        let wanted = format!("package/{path}");
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(&tarball[..]));
        for entry in archive.entries().expect("the tarball reads") {
            let mut entry = entry.expect("the tarball's entry reads");
            if entry.path().expect("the entry has a path").to_str() == Some(wanted.as_str()) {
                let mut contents = Vec::new();
                entry
                    .read_to_end(&mut contents)
                    .expect("the entry's file reads");
                return contents;
            }
        }
        panic!("{} {} holds no {path}", self.name, self.version);
    }

    /// The tarball, from the cache when it holds the pinned one, else from the registry.
    async fn tarball(&self) -> Vec<u8> {
        let path = self.cache_path();
        if let Ok(cached) = std::fs::read(&path) {
            if integrity(&cached) == self.integrity {
                return cached;
            }
        }
        let downloaded = self.download().await;
        let found = integrity(&downloaded);
        assert_eq!(
            found, self.integrity,
            "{} {} from the registry does not match its pinned integrity",
            self.name, self.version
        );
        let partial = path.with_extension("tgz.partial");
        std::fs::write(&partial, &downloaded).expect("the tarball is written");
        std::fs::rename(&partial, &path).expect("the tarball is renamed into the cache");
        downloaded
    }

    async fn download(&self) -> Vec<u8> {
        let url = format!("{REGISTRY}/{}/-/{}", self.name, self.file_name());
        let client = reqwest::Client::builder()
            .timeout(DOWNLOAD_TIMEOUT)
            .build()
            .expect("the HTTP client builds");
        let response = client
            .get(&url)
            .send()
            .await
            .unwrap_or_else(|error| panic!("{url} cannot be downloaded: {error}"));
        assert!(
            response.status().is_success(),
            "{url} answered {}",
            response.status()
        );
        response
            .bytes()
            .await
            .expect("the tarball downloads")
            .to_vec()
    }
}

/// The npm `integrity` string of `bytes`: `sha512-` and the base64 of their SHA-512.
pub fn integrity(bytes: &[u8]) -> String {
    let digest = Sha512::digest(bytes);
    format!(
        "sha512-{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}
