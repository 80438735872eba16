//! Assembling the server: the data directory, the cores, and on each core its control-plane
//! replica, its router and its listeners.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::rc::Rc;

use crate::config::Config;
use crate::control::features::ForcedFeatures;
use crate::control::{ControlBroadcast, ControlPlane, ControlReply, ControlRequest};
use std::sync::Arc;

use crate::config::Environment;
use crate::http::HttpLimits;
use crate::http::tls::{TlsAcceptor, TlsOptions};
use crate::routes::{Router, Services};
use crate::runtime::mesh::{self, MeshSetup};
use crate::runtime::shutdown::ShutdownFlag;
use crate::runtime::{CoreContext, CoreMesh, RuntimeOptions};

/// What every core is started with; cloned into each executor.
#[derive(Clone)]
struct CoreSettings {
    data_directory: PathBuf,
    master_key: Option<String>,
    production: bool,
    forced_features: ForcedFeatures,
    limits: HttpLimits,
    tls: Option<Arc<futures_rustls::rustls::ServerConfig>>,
    mesh: MeshSetup<ControlRequest, ControlReply, ControlBroadcast>,
}

/// Runs the server until SIGINT or SIGTERM; returns once every core has stopped.
pub fn run(config: &Config, data_directory: PathBuf) -> Result<(), String> {
    let addresses = resolve(&config.http_addr)?;
    let shutdown = ShutdownFlag::from_signals()
        .map_err(|error| format!("could not install the signal handlers: {error}"))?;
    let tls = tls_config(config)?;
    let settings = CoreSettings {
        data_directory,
        master_key: config.master_key.clone(),
        production: config.env == Environment::Production,
        forced_features: ForcedFeatures {
            metrics: config.experimental_enable_metrics,
            logs_route: config.experimental_enable_logs_route,
            contains_filter: config.experimental_contains_filter,
        },
        limits: HttpLimits {
            payload_bytes_max: config.http_payload_size_limit,
            ..HttpLimits::default()
        },
        tls,
        mesh: mesh::setup(config.cores),
    };
    let options = RuntimeOptions {
        cores: config.cores,
        addresses: addresses.clone(),
    };
    tracing::info!(
        addresses = ?addresses,
        cores = config.cores,
        "coresearch {} (Meilisearch API {}) starting",
        env!("CARGO_PKG_VERSION"),
        crate::routes::root::API_VERSION
    );
    crate::runtime::run(&options, shutdown, move |context| {
        core_main(context, settings.clone())
    })
    .map_err(|error| error.to_string())
}

async fn core_main(context: CoreContext, settings: CoreSettings) -> Result<(), String> {
    let CoreContext {
        core,
        listeners,
        shutdown,
        ..
    } = context;
    let features = crate::control::load_features(&settings.data_directory)?;
    let data_directory = settings.data_directory.clone();
    let forced = settings.forced_features;
    let (mesh, control) = CoreMesh::join(settings.mesh, move |mesh| {
        Rc::new(ControlPlane::new(mesh, data_directory, features, forced))
    })
    .await
    .map_err(|error| format!("could not join the core mesh: {error:?}"))?;
    let tls = settings.tls.map(|config| Rc::new(TlsAcceptor::new(config)));
    let router = Rc::new(Router::new(Services {
        core,
        control,
        master_key: settings.master_key,
        production: settings.production,
        payload_bytes_max: settings.limits.payload_bytes_max,
    }));
    tracing::debug!(core, "serving");
    crate::runtime::listener::serve(listeners, router, Rc::new(settings.limits), tls, shutdown)
        .await;
    mesh.close();
    Ok(())
}

/// The TLS server configuration when `--ssl-cert-path` and `--ssl-key-path` are given.
fn tls_config(
    config: &Config,
) -> Result<Option<Arc<futures_rustls::rustls::ServerConfig>>, String> {
    let (Some(cert_path), Some(key_path)) = (&config.ssl_cert_path, &config.ssl_key_path) else {
        return Ok(None);
    };
    let options = TlsOptions {
        cert_path: cert_path.clone(),
        key_path: key_path.clone(),
        auth_path: config.ssl_auth_path.clone(),
        require_auth: config.ssl_require_auth,
        ocsp_path: config.ssl_ocsp_path.clone(),
        resumption: config.ssl_resumption,
        tickets: config.ssl_tickets,
    };
    crate::http::tls::server_config(&options)
        .map(Some)
        .map_err(|error| format!("TLS: {error}"))
}

/// Every socket address `http_addr` names (`localhost:7700` gives the loopback ones).
fn resolve(http_addr: &str) -> Result<Vec<SocketAddr>, String> {
    let mut addresses: Vec<SocketAddr> = http_addr
        .to_socket_addrs()
        .map_err(|error| format!("`{http_addr}` is not a valid address to listen on: {error}"))?
        .collect();
    addresses.sort();
    addresses.dedup();
    if addresses.is_empty() {
        return Err(format!("`{http_addr}` resolves to no address"));
    }
    Ok(addresses)
}
