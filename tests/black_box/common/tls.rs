//! A blocking TLS client for servers started with `--ssl-cert-path`: it trusts whatever
//! certificate the server presents (the tests look at which one it was) and reads answers
//! with the same parser as the plain connections.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;

use futures_rustls::rustls;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, SignatureScheme, StreamOwned};

use super::{HttpResponse, RESPONSE_WAIT, read_response_from};

/// Accepts any server certificate whose handshake signatures verify.
#[derive(Debug)]
struct AnyCertificate(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

fn client_config() -> Arc<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = AnyCertificate(provider.signature_verification_algorithms);
    Arc::new(
        ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("with_safe_default_protocol_versions succeeds")
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth(),
    )
}

/// One TLS connection, kept open across requests.
pub struct TlsConnection {
    stream: StreamOwned<ClientConnection, TcpStream>,
    buffer: Vec<u8>,
}

impl TlsConnection {
    /// Connects to `address` and completes the handshake.
    pub fn connect(address: SocketAddr) -> std::io::Result<TlsConnection> {
        let socket = TcpStream::connect(address)?;
        socket.set_read_timeout(Some(RESPONSE_WAIT))?;
        let name = ServerName::try_from("localhost").expect("try_from succeeds");
        let connection =
            ClientConnection::new(client_config(), name).map_err(std::io::Error::other)?;
        let mut stream = StreamOwned::new(connection, socket);
        while stream.conn.is_handshaking() {
            stream.conn.complete_io(&mut stream.sock)?;
        }
        Ok(TlsConnection {
            stream,
            buffer: Vec::new(),
        })
    }

    /// The DER of the certificate the server presented (the leaf).
    pub fn peer_certificate(&self) -> Vec<u8> {
        self.stream
            .conn
            .peer_certificates()
            .and_then(|chain| chain.first())
            .expect("the server presented a certificate")
            .to_vec()
    }

    /// Sends `request` (raw HTTP) and reads its answer.
    pub fn request(&mut self, request: &str) -> std::io::Result<HttpResponse> {
        self.stream.write_all(request.as_bytes())?;
        self.stream.flush()?;
        read_response_from(&mut self.stream, &mut self.buffer)
    }
}
