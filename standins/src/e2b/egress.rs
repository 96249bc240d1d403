//! The stand-in's egress proxy: what E2B's intercepting proxy does for a VM
//! created with `allowOut` hosts and `rules`. Such a VM joins a docker
//! network the stand-in creates with `internal: true` (no route out); the
//! only thing it can reach is this proxy, on the host's address on that
//! bridge, port 443, to which each allowed hostname points (the container's
//! `extra_hosts`). The proxy terminates TLS with the stand-in's own CA,
//! generated at start, serving a certificate only for a hostname the
//! connecting VM may reach; the VM trusts the CA because the stand-in
//! bind-mounts an OS bundle that includes it at
//! `/etc/ssl/certs/ca-certificates.crt`, as E2B's CA is in its VMs' trust
//! store. Each request's `Host` must be the TLS name; the rule's headers are
//! set (replacing any the guest sent), and the request is forwarded over
//! plain HTTP to the upstream the stand-in's `--upstream HOST=ADDR` maps the
//! hostname to (standing in for the public DNS and TLS path from E2B to the
//! operator's endpoint; plain HTTP to a loopback upstream only).
//!
//! A VM is known by its address on the network; a connection from any other
//! address, a TLS name outside the VM's `allowOut`, or no TLS name, is
//! closed without an answer. Not covered: CIDR and IP entries in `allowOut`,
//! wildcard rules, plain HTTP egress, and DNS (the VM resolves only the
//! names in its `/etc/hosts`). Other services listening on every address of
//! the host are reachable from such a VM too, on the bridge address: this
//! stand-in does not firewall the host.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bollard::Docker;
use hyper::body::Incoming;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::TcpListener;

use super::lock;

mod forward;

/// Headers a VM's requests to one host get, by host.
pub type Rules = BTreeMap<String, Vec<(String, String)>>;

/// The label on the stand-in's egress network (its value: the run id).
pub const NETWORK_LABEL: &str = "io.plimsoll.standin.e2b.egress";
/// The label naming the process that made an egress network (its leftovers
/// are removed by the next stand-in once that process is gone).
pub const PID_LABEL: &str = "io.plimsoll.standin.e2b.egress.pid";
/// Where a guarded VM finds the OS bundle that holds the stand-in's CA.
pub const BUNDLE_IN_VM: &str = "/etc/ssl/certs/ca-certificates.crt";
/// The host's own OS bundle, copied into the VMs' bundle beside the CA.
const HOST_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

pub(crate) type Upstream = hyper_util::client::legacy::Client<
    hyper_util::client::legacy::connect::HttpConnector,
    Incoming,
>;

/// The proxy, its network and its CA.
pub struct Egress {
    /// The docker network guarded VMs join.
    pub network: String,
    /// The host's address on it, where the proxy listens (port 443).
    pub gateway: IpAddr,
    /// The OS bundle with the CA, bind-mounted read-only at [`BUNDLE_IN_VM`].
    pub bundle: PathBuf,
    /// The CA certificate, PEM.
    pub ca_pem: String,
    dir: PathBuf,
    upstreams: HashMap<String, SocketAddr>,
    ca: rcgen::Issuer<'static, rcgen::KeyPair>,
    configs: Mutex<HashMap<String, Arc<rustls::ServerConfig>>>,
    vms: Mutex<HashMap<IpAddr, Arc<Rules>>>,
    docker: Docker,
    client: Upstream,
    accept: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for Egress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Egress")
            .field("network", &self.network)
            .field("gateway", &self.gateway)
            .field("upstreams", &self.upstreams)
            .finish_non_exhaustive()
    }
}

fn fail(what: &str, e: impl std::fmt::Display) -> String {
    format!("{what}: {e}")
}

fn new_ca() -> Result<(rcgen::Issuer<'static, rcgen::KeyPair>, String), String> {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(|e| fail("CA", e))?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, "plimsoll E2B stand-in egress proxy CA");
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let key = KeyPair::generate().map_err(|e| fail("CA key", e))?;
    let cert = params.self_signed(&key).map_err(|e| fail("CA", e))?;
    Ok((rcgen::Issuer::new(params, key), cert.pem()))
}

impl Egress {
    /// Generates the CA, writes the VMs' bundle, creates the internal
    /// network and listens on its gateway, port 443.
    pub async fn start(
        docker: &Docker,
        run_id: &str,
        upstreams: HashMap<String, SocketAddr>,
    ) -> Result<Arc<Egress>, String> {
        let (ca, ca_pem) = new_ca()?;
        let dir = std::env::temp_dir().join(format!("plimsoll-standin-e2b-{run_id}"));
        std::fs::create_dir_all(&dir).map_err(|e| fail("egress dir", e))?;
        let mut bundle_text = std::fs::read_to_string(HOST_BUNDLE).unwrap_or_default();
        if !bundle_text.is_empty() && !bundle_text.ends_with('\n') {
            bundle_text.push('\n');
        }
        bundle_text.push_str(&ca_pem);
        let bundle = dir.join("ca-certificates.crt");
        std::fs::write(&bundle, bundle_text).map_err(|e| fail("egress bundle", e))?;
        remove_leftovers(docker).await;
        let network = format!("plimsoll-standin-egress-{run_id}");
        let request = bollard::models::NetworkCreateRequest {
            name: network.clone(),
            driver: Some("bridge".into()),
            internal: Some(true),
            labels: Some(HashMap::from([
                (NETWORK_LABEL.to_owned(), run_id.to_owned()),
                (PID_LABEL.to_owned(), std::process::id().to_string()),
            ])),
            ..Default::default()
        };
        docker
            .create_network(request)
            .await
            .map_err(|e| fail("docker network create (egress)", e))?;
        let gateway = match gateway_of(docker, &network).await {
            Ok(g) => g,
            Err(e) => {
                let _ = docker.remove_network(&network).await;
                return Err(e);
            }
        };
        let listener = match TcpListener::bind((gateway, 443)).await {
            Ok(l) => l,
            Err(e) => {
                let _ = docker.remove_network(&network).await;
                return Err(fail(
                    &format!("egress proxy: listening on {gateway}:443"),
                    e,
                ));
            }
        };
        let client =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http();
        let egress = Arc::new(Egress {
            network,
            gateway,
            bundle,
            ca_pem,
            dir,
            upstreams: upstreams
                .into_iter()
                .map(|(h, a)| (h.to_ascii_lowercase(), a))
                .collect(),
            ca,
            configs: Mutex::default(),
            vms: Mutex::default(),
            docker: docker.clone(),
            client,
            accept: Mutex::default(),
        });
        let e = egress.clone();
        *lock(&egress.accept) = Some(tokio::spawn(async move { e.serve(listener).await }));
        Ok(egress)
    }

    /// Whether `host` has an upstream (only such hosts may be allowed out).
    pub fn serves(&self, host: &str) -> bool {
        self.upstreams.contains_key(&host.to_ascii_lowercase())
    }

    /// Lets the VM at `addr` reach `rules`' hosts, with their headers.
    pub fn admit(&self, addr: IpAddr, rules: Rules) {
        lock(&self.vms).insert(addr, Arc::new(rules));
    }

    /// Forgets the VM at `addr`.
    pub fn forget(&self, addr: IpAddr) {
        lock(&self.vms).remove(&addr);
    }

    /// The address `container` has on the egress network.
    pub async fn address_of(&self, container: &str) -> Result<IpAddr, String> {
        let c = self
            .docker
            .inspect_container(container, None)
            .await
            .map_err(|e| fail("docker inspect", e))?;
        c.network_settings
            .and_then(|n| n.networks)
            .and_then(|mut n| n.remove(&self.network))
            .and_then(|n| n.ip_address)
            .and_then(|ip| ip.parse().ok())
            .ok_or_else(|| format!("{container} has no address on {}", self.network))
    }

    /// Stops listening, removes the network (its VMs gone first) and the bundle.
    pub async fn stop(&self) {
        if let Some(a) = lock(&self.accept).take() {
            a.abort();
        }
        if let Err(e) = self.docker.remove_network(&self.network).await {
            tracing::warn!(network = %self.network, error = %e, "removing the egress network failed");
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }

    async fn serve(self: Arc<Self>, listener: TcpListener) {
        loop {
            let Ok((tcp, peer)) = listener.accept().await else {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            };
            let e = self.clone();
            tokio::spawn(async move {
                if let Err(why) = e.connection(tcp, peer).await {
                    tracing::debug!(peer = %peer, why = %why, "egress connection closed");
                }
            });
        }
    }

    /// The TLS config for `host`: a certificate for it, signed by the CA.
    fn config(&self, host: &str) -> Result<Arc<rustls::ServerConfig>, String> {
        if let Some(c) = lock(&self.configs).get(host) {
            return Ok(c.clone());
        }
        let mut params =
            rcgen::CertificateParams::new(vec![host.to_owned()]).map_err(|e| fail("leaf", e))?;
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, host);
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        // Python 3.13's default context verifies X.509 strictly (RFC 5280):
        // a certificate a CA issued must name it by key identifier.
        params.use_authority_key_identifier_extension = true;
        let key = rcgen::KeyPair::generate().map_err(|e| fail("leaf key", e))?;
        let cert = params
            .signed_by(&key, &self.ca)
            .map_err(|e| fail("leaf", e))?;
        let chain = vec![CertificateDer::from(cert.der().to_vec())];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| fail("tls", e))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| fail("tls", e))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let config = Arc::new(config);
        lock(&self.configs).insert(host.to_owned(), config.clone());
        Ok(config)
    }

    async fn connection(
        self: Arc<Self>,
        tcp: tokio::net::TcpStream,
        peer: SocketAddr,
    ) -> Result<(), String> {
        let rules = lock(&self.vms)
            .get(&peer.ip())
            .cloned()
            .ok_or("not a guarded VM")?;
        let acceptor =
            tokio_rustls::LazyConfigAcceptor::new(rustls::server::Acceptor::default(), tcp);
        let start = acceptor.await.map_err(|e| fail("tls hello", e))?;
        let host = start
            .client_hello()
            .server_name()
            .map(str::to_ascii_lowercase)
            .ok_or("no TLS server name")?;
        let upstream = match (rules.contains_key(&host), self.upstreams.get(&host)) {
            (true, Some(a)) => *a,
            _ => return Err(format!("{host} is not allowed out")),
        };
        let tls = start
            .into_stream(self.config(&host)?)
            .await
            .map_err(|e| fail("tls", e))?;
        let headers = rules.get(&host).cloned().unwrap_or_default();
        let client = self.client.clone();
        let svc = hyper::service::service_fn(move |req| {
            forward::forward(client.clone(), req, host.clone(), upstream, headers.clone())
        });
        hyper::server::conn::http1::Builder::new()
            .serve_connection(hyper_util::rt::TokioIo::new(tls), svc)
            .await
            .map_err(|e| fail("http", e))
    }
}

async fn gateway_of(docker: &Docker, network: &str) -> Result<IpAddr, String> {
    let n = docker
        .inspect_network(network, None)
        .await
        .map_err(|e| fail("docker network inspect", e))?;
    n.ipam
        .and_then(|i| i.config)
        .into_iter()
        .flatten()
        .filter_map(|c| c.gateway)
        .find_map(|g| g.parse::<IpAddr>().ok().filter(IpAddr::is_ipv4))
        .ok_or_else(|| format!("network {network} has no IPv4 gateway"))
}

/// Removes egress networks whose stand-in process is gone, with that
/// stand-in's VMs (a test that panicked before stopping its stand-in leaves
/// both).
async fn remove_leftovers(docker: &Docker) {
    let opts = bollard::query_parameters::ListNetworksOptionsBuilder::new()
        .filters(&HashMap::from([("label", vec![PID_LABEL])]))
        .build();
    let Ok(networks) = docker.list_networks(Some(opts)).await else {
        return;
    };
    for n in networks {
        let label = |k: &str| n.labels.as_ref().and_then(|l| l.get(k)).cloned();
        let gone =
            label(PID_LABEL).is_some_and(|p| !std::path::Path::new(&format!("/proc/{p}")).exists());
        let (true, Some(name), Some(run)) = (gone, n.name.clone(), label(NETWORK_LABEL)) else {
            continue;
        };
        // Its VMs first (a network with endpoints cannot go).
        let filter = format!("{}={run}", super::vm::LABEL);
        let opts = bollard::query_parameters::ListContainersOptionsBuilder::new()
            .all(true)
            .filters(&HashMap::from([("label", vec![filter.as_str()])]))
            .build();
        for c in docker.list_containers(Some(opts)).await.unwrap_or_default() {
            if let Some(id) = c.id {
                let rm = bollard::query_parameters::RemoveContainerOptionsBuilder::new()
                    .force(true)
                    .build();
                let _ = docker.remove_container(&id, Some(rm)).await;
            }
        }
        let _ = docker.remove_network(&name).await;
    }
}
