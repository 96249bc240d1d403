//! The per-run lockdown: every setting a container is created with.
//!
//! One function builds the create call for every container plimsoll starts —
//! snippets, projects and the startup proof — so the proof tests exactly what
//! runs get. What it does not cover: anything docker adds on its own (its
//! default masked paths, `/etc/hosts` and friends), which the proof reads back
//! from inside.

use std::collections::HashMap;
use std::path::Path;

use bollard::models::{
    ContainerCreateBody, HealthConfig, HostConfig, HostConfigLogConfig, ResourcesUlimits,
    RestartPolicy, RestartPolicyNameEnum,
};

use crate::provider::docker::{DockerEnvelope, DockerSettings};

/// The label naming the daemon instance that created a container.
pub(crate) const LABEL_INSTANCE: &str = "io.plimsoll.instance";
/// The label holding the unix second after which a container is surely leaked.
pub(crate) const LABEL_EXPIRES: &str = "io.plimsoll.expires";
/// The label saying what a container is for (`snippet`, `project`, `proof`).
pub(crate) const LABEL_ROLE: &str = "io.plimsoll.role";
/// Where a run's broker socket directory is mounted (read-only) inside.
pub(crate) const BROKER_DIR: &str = "/run/plimsoll";
/// The broker socket's name inside [`BROKER_DIR`].
pub(crate) const BROKER_SOCKET: &str = "host-api.sock";
/// Where the images keep the Node host API client (images/clients/host.js).
pub(crate) const NODE_CLIENT: &str = "/usr/local/lib/plimsoll/host.js";
/// The label naming the session a container holds (its fingerprint, never its id).
pub(crate) const LABEL_SESSION: &str = "io.plimsoll.session";
/// Marks a warm pool's member (`snippet`): made before its run.
pub(crate) const LABEL_POOL: &str = "io.plimsoll.pool";
/// The work directory of projects.
pub(crate) const WORK: &str = "/work";

/// What a container runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// `node -` reading the snippet on stdin, as the guest.
    Snippet,
    /// A keeper (`sleep`, as guest uid + 1) that steps are exec'd beside.
    Project,
    /// A session: a keeper like `Project`'s, kept for many calls.
    Session,
    /// The startup proof: a keeper with the mounts of `Snippet` or `Project`.
    Proof {
        /// Mount `/work` as projects do.
        work: bool,
    },
}

impl Role {
    fn as_str(self) -> &'static str {
        match self {
            Role::Snippet => "snippet",
            Role::Project => "project",
            Role::Session => "session",
            Role::Proof { .. } => "proof",
        }
    }

    fn has_work(self) -> bool {
        matches!(
            self,
            Role::Project | Role::Session | Role::Proof { work: true }
        )
    }
}

/// A writable tmpfs a run is promised: where, and how big.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Promise {
    /// The mount point.
    pub path: &'static str,
    /// The size, MiB.
    pub size_mb: u32,
}

/// Everything that decides the create call besides the role.
#[derive(Debug, Clone)]
pub(crate) struct Lockdown {
    /// The docker settings.
    pub settings: DockerSettings,
    /// The resource envelope.
    pub envelope: DockerEnvelope,
    /// `seccomp=<inline JSON>` or `seccomp=unconfined`; `None` for docker's default.
    pub seccomp_opt: Option<String>,
    /// Under runsc, the profile (compact JSON) every guest process loads
    /// itself ([`seccomp::EXEC_LOADER`]): this gVisor filters only a
    /// container's first process, and answers every refusal of a container's
    /// profile with EPERM, ignoring `errnoRet` (glibc then cannot fall back
    /// from clone3). `None` under runc (runc filters every exec, with the
    /// profile's errnos) and when the profile's rules are not readable
    /// (docker's default) or there is none.
    ///
    /// [`seccomp::EXEC_LOADER`]: super::seccomp::EXEC_LOADER
    pub exec_filter: Option<String>,
    /// The instance label value.
    pub instance: String,
}

/// A fresh container name: `plimsoll-<16 hex>`.
pub(crate) fn container_name() -> String {
    format!("plimsoll-{}", hex::encode(rand::random::<[u8; 8]>()))
}

impl Lockdown {
    /// `uid:gid` guest code runs as.
    pub fn guest_user(&self) -> String {
        let u = self.settings.guest_uid;
        format!("{u}:{u}")
    }

    /// `uid:gid` of the keeper process of project and proof containers; the
    /// guest cannot signal or trace it.
    pub fn keeper_user(&self) -> String {
        let u = self.settings.guest_uid + 1;
        format!("{u}:{u}")
    }

    /// The writable mounts a role is promised.
    pub fn promises(&self, role: Role) -> Vec<Promise> {
        let mut p = vec![
            Promise {
                path: "/tmp",
                size_mb: self.envelope.tmp_mb,
            },
            Promise {
                path: "/dev/shm",
                size_mb: self.envelope.shm_mb,
            },
        ];
        if role.has_work() {
            p.push(Promise {
                path: WORK,
                size_mb: self.envelope.work_mb,
            });
        }
        p
    }

    fn tmpfs(&self, role: Role) -> HashMap<String, String> {
        let mut m: HashMap<String, String> = self
            .promises(role)
            .into_iter()
            .map(|p| {
                let mode = if p.path == "/dev/shm" || p.path == WORK {
                    ",mode=1777"
                } else {
                    ""
                };
                (
                    p.path.to_string(),
                    format!("rw,noexec,nosuid,nodev,size={}m{mode}", p.size_mb),
                )
            })
            .collect();
        // Docker's /dev/mqueue is writable by anyone (each file a POSIX message
        // queue); a read-only empty tmpfs replaces it, so the mount table holds
        // no writable place but the promised ones.
        m.insert(
            "/dev/mqueue".into(),
            "ro,noexec,nosuid,nodev,size=4k".into(),
        );
        m
    }

    /// The environment every guest process gets: the image's own (inspected,
    /// loader variables refused) plus `HOME=/tmp`. Nothing of the host's.
    pub fn guest_env(&self, image_env: &[String]) -> Vec<String> {
        let mut env: Vec<String> = image_env
            .iter()
            .filter(|e| !e.starts_with("HOME=") && !e.starts_with("HOSTNAME="))
            .cloned()
            .collect();
        if !env.iter().any(|e| e.starts_with("PATH=")) {
            env.push("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into());
        }
        env.push("HOME=/tmp".into());
        env
    }

    /// argv for guest code (a snippet's node, a step, a session's snippet or
    /// interpreter, the proof's probes): `cmd`, through the filter loader
    /// when [`Lockdown::exec_filter`] is set. plimsoll's own tools
    /// (file writer, stopper, collector, cleanup) run without it: they run no
    /// guest code, and a guest process cannot trace them (the profile refuses
    /// ptrace).
    pub fn guest_cmd(&self, cmd: Vec<String>) -> Vec<String> {
        match &self.exec_filter {
            Some(profile) => super::seccomp::filtered(profile, cmd),
            None => cmd,
        }
    }

    /// The security options: no-new-privileges and the seccomp choice.
    pub fn security_opt(&self) -> Vec<String> {
        let mut v = vec!["no-new-privileges:true".to_string()];
        if let Some(s) = &self.seccomp_opt {
            v.push(s.clone());
        }
        v
    }

    /// The create call for `role` on the exact image ID `image_id`.
    ///
    /// `keeper_secs` bounds a keeper's life; `expires` is the unix second put on
    /// the expiry label; `broker` is a host directory holding a broker socket,
    /// mounted read-only at [`BROKER_DIR`]. A snippet or project with a broker
    /// is a granted run: its processes get `HOST_API_SOCKET`, and a snippet's
    /// node preloads the host client ([`NODE_CLIENT`]) so `host` is a global.
    pub fn create_body(
        &self,
        role: Role,
        image_id: &str,
        image_env: &[String],
        keeper_secs: u64,
        expires: u64,
        broker: Option<&Path>,
    ) -> ContainerCreateBody {
        let e = &self.envelope;
        let memory = (e.memory_mb as i64) << 20;
        let (user, entrypoint, workdir, stdin) = match role {
            Role::Snippet if broker.is_some() => (
                self.guest_user(),
                self.guest_cmd(vec![
                    "node".to_string(),
                    "--require".to_string(),
                    NODE_CLIENT.to_string(),
                    "-".to_string(),
                ]),
                "/tmp",
                true,
            ),
            Role::Snippet => (
                self.guest_user(),
                self.guest_cmd(vec!["node".to_string(), "-".to_string()]),
                "/tmp",
                true,
            ),
            // Not /work: docker would create a container working directory in
            // the image's root first, and its 0755 root mode would be copied
            // over the /work tmpfs. Steps get /work as their exec's directory.
            Role::Project | Role::Session | Role::Proof { .. } => (
                self.keeper_user(),
                vec!["sleep".to_string(), keeper_secs.to_string()],
                "/tmp",
                false,
            ),
        };
        let labels = HashMap::from([
            (LABEL_INSTANCE.to_string(), self.instance.clone()),
            (LABEL_EXPIRES.to_string(), expires.to_string()),
            (LABEL_ROLE.to_string(), role.as_str().to_string()),
        ]);
        let binds = broker.map(|dir| vec![format!("{}:{BROKER_DIR}:ro", dir.to_string_lossy())]);
        let mut env = self.guest_env(image_env);
        if broker.is_some() && matches!(role, Role::Snippet | Role::Project) {
            env.push(format!("HOST_API_SOCKET={BROKER_DIR}/{BROKER_SOCKET}"));
        }
        let host_config = HostConfig {
            runtime: Some(self.settings.runtime_name.clone()),
            readonly_rootfs: Some(true),
            tmpfs: Some(self.tmpfs(role)),
            network_mode: Some("none".into()),
            cap_drop: Some(vec!["ALL".into()]),
            cap_add: Some(vec![]),
            privileged: Some(false),
            security_opt: Some(self.security_opt()),
            memory: Some(memory),
            memory_swap: Some(memory),
            memory_swappiness: None,
            nano_cpus: Some((e.cpus * 1e9).round() as i64),
            pids_limit: Some(e.pids as i64),
            ulimits: Some(vec![
                ResourcesUlimits {
                    name: Some("core".into()),
                    soft: Some(0),
                    hard: Some(0),
                },
                ResourcesUlimits {
                    name: Some("nofile".into()),
                    soft: Some(4096),
                    hard: Some(4096),
                },
            ]),
            ipc_mode: Some("private".into()),
            log_config: Some(HostConfigLogConfig {
                typ: Some("none".into()),
                config: None,
            }),
            init: Some(true),
            restart_policy: Some(RestartPolicy {
                name: Some(RestartPolicyNameEnum::NO),
                maximum_retry_count: None,
            }),
            auto_remove: Some(false),
            // The guest dies first when the host runs short of memory.
            oom_score_adj: Some(1000),
            binds,
            ..HostConfig::default()
        };
        ContainerCreateBody {
            image: Some(image_id.to_string()),
            user: Some(user),
            entrypoint: Some(entrypoint),
            cmd: None,
            working_dir: Some(workdir.into()),
            env: Some(env),
            labels: Some(labels),
            network_disabled: Some(true),
            attach_stdin: Some(stdin),
            attach_stdout: Some(stdin),
            attach_stderr: Some(stdin),
            open_stdin: Some(stdin),
            stdin_once: Some(stdin),
            tty: Some(false),
            healthcheck: Some(HealthConfig {
                test: Some(vec!["NONE".into()]),
                ..HealthConfig::default()
            }),
            host_config: Some(host_config),
            ..ContainerCreateBody::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ResourceSettings;
    use crate::provider::docker::DockerRuntime;

    fn lockdown() -> Lockdown {
        let settings = DockerSettings::default();
        Lockdown {
            envelope: DockerEnvelope::from_settings(
                &ResourceSettings::default(),
                DockerRuntime::Runc,
            )
            .unwrap(),
            settings,
            seccomp_opt: Some("seccomp={}".into()),
            exec_filter: None,
            instance: "plimsoll:t".into(),
        }
    }

    #[test]
    fn project_body_is_locked_down() {
        let l = lockdown();
        let b = l.create_body(
            Role::Project,
            "sha256:ab",
            &["PATH=/bin".into(), "HOME=/root".into()],
            60,
            1234,
            None,
        );
        let h = b.host_config.as_ref().unwrap();
        assert_eq!(b.image.as_deref(), Some("sha256:ab"));
        assert_eq!(b.user.as_deref(), Some("61001:61001"));
        assert_eq!(h.readonly_rootfs, Some(true));
        assert_eq!(h.network_mode.as_deref(), Some("none"));
        assert_eq!(h.cap_drop.as_deref(), Some(&["ALL".to_string()][..]));
        assert_eq!(h.memory, h.memory_swap);
        assert_eq!(h.memory, Some(256 << 20));
        assert_eq!(h.nano_cpus, Some(1_000_000_000));
        assert_eq!(h.pids_limit, Some(256));
        let t = h.tmpfs.as_ref().unwrap();
        assert_eq!(t["/tmp"], "rw,noexec,nosuid,nodev,size=16m");
        assert_eq!(t["/work"], "rw,noexec,nosuid,nodev,size=128m,mode=1777");
        assert!(t["/dev/mqueue"].starts_with("ro,"));
        assert_eq!(
            b.env.as_deref().unwrap(),
            &["PATH=/bin".to_string(), "HOME=/tmp".to_string()][..]
        );
        assert_eq!(b.labels.as_ref().unwrap()[LABEL_EXPIRES], "1234");
        assert!(h.binds.is_none());
    }

    #[test]
    fn snippet_and_proof_bodies() {
        let l = lockdown();
        let s = l.create_body(Role::Snippet, "sha256:ab", &[], 0, 1, None);
        assert_eq!(s.user.as_deref(), Some("61000:61000"));
        assert_eq!(s.open_stdin, Some(true));
        assert!(!s.host_config.unwrap().tmpfs.unwrap().contains_key("/work"));
        let p = l.create_body(
            Role::Proof { work: false },
            "sha256:ab",
            &[],
            30,
            1,
            Some(Path::new("/x/y")),
        );
        assert_eq!(
            p.host_config.unwrap().binds.unwrap(),
            vec!["/x/y:/run/plimsoll:ro".to_string()]
        );
        assert!(container_name().starts_with("plimsoll-"));
        assert_eq!(container_name().len(), "plimsoll-".len() + 16);
    }

    #[test]
    fn granted_bodies_mount_the_socket_and_name_it() {
        let l = lockdown();
        let socket = "HOST_API_SOCKET=/run/plimsoll/host-api.sock".to_string();
        let plain = l.create_body(Role::Snippet, "sha256:ab", &[], 0, 1, None);
        assert!(!plain.env.unwrap().contains(&socket));
        assert_eq!(plain.entrypoint.unwrap(), ["node", "-"]);
        let dir = Some(Path::new("/tmp/plimsoll-broker-1"));
        let s = l.create_body(Role::Snippet, "sha256:ab", &[], 0, 1, dir);
        assert!(s.env.unwrap().contains(&socket));
        assert_eq!(
            s.entrypoint.unwrap(),
            ["node", "--require", NODE_CLIENT, "-"]
        );
        assert_eq!(s.network_disabled, Some(true));
        let h = s.host_config.unwrap();
        assert_eq!(h.network_mode.as_deref(), Some("none"));
        assert_eq!(
            h.binds.unwrap(),
            ["/tmp/plimsoll-broker-1:/run/plimsoll:ro"]
        );
        let p = l.create_body(Role::Project, "sha256:ab", &[], 30, 1, dir);
        assert!(p.env.unwrap().contains(&socket));
        assert_eq!(p.entrypoint.unwrap(), ["sleep", "30"]);
    }
}
