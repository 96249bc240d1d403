//! A private docker daemon for destructive fault tests.
//!
//! Each [`PrivateDocker`] runs its own `containerd` (own root, state and
//! socket) and its own `dockerd` (own `-H` socket, `--data-root`,
//! `--exec-root`, `--pidfile`, no bridge, no iptables, in its own network
//! namespace so its bridge handling never touches the host's), with the host's
//! runtimes configuration (`/etc/docker/daemon.json`: runc, and runsc with its
//! runtimeArgs). The plimsoll images are copied in with `docker save | docker
//! load`, which keeps their IDs. A test may kill, restart or starve it; the
//! host's own dockerd is only ever read from (`docker save`).
//!
//! Dropping it tears everything down: every container force-removed (dockerd
//! restarted for that if a test left it down), dockerd and containerd stopped,
//! leftover shims of this containerd killed, mounts under its directory
//! unmounted (the loop-mounted data root too), the directory removed. No
//! container is ever paused.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The images copied in from the host's dockerd.
pub const IMAGES: [&str; 2] = ["plimsoll/snippet:latest", "plimsoll/project:latest"];

/// One private containerd + dockerd pair.
pub struct PrivateDocker {
    /// The directory holding sockets, state, logs and the data root.
    pub dir: PathBuf,
    /// Extra dockerd arguments, taken at the next [`PrivateDocker::start_dockerd`].
    pub dockerd_args: Vec<String>,
    containerd: Option<Child>,
    dockerd: Option<Child>,
}

fn run_ok(c: &mut Command) -> String {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{c:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stop(child: &mut Child, grace: Duration) {
    let pid = child.id().to_string();
    let _ = Command::new("kill").args(["-TERM", &pid]).status();
    let t = Instant::now();
    while t.elapsed() < grace {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

impl PrivateDocker {
    /// Starts containerd and dockerd, and loads the plimsoll images. With
    /// `data_mb`, the data root is a fresh ext4 filesystem of that size
    /// (no reserved blocks) on a loop device, so a test can fill it.
    pub fn start(data_mb: Option<u64>) -> PrivateDocker {
        assert!(
            Path::new("/etc/docker/daemon.json").exists(),
            "/etc/docker/daemon.json (runtimes) is missing: run .ci/setup-host.sh"
        );
        let mut rnd = [0u8; 4];
        rand::fill(&mut rnd);
        let dir = PathBuf::from(format!("/tmp/plf-{}", hex(&rnd)));
        std::fs::create_dir_all(dir.join("data")).unwrap();
        let mut me = PrivateDocker {
            dir,
            dockerd_args: Vec::new(),
            containerd: None,
            dockerd: None,
        };
        if let Some(mb) = data_mb {
            let img = me.dir.join("disk.img");
            run_ok(Command::new("truncate").arg(format!("-s{mb}M")).arg(&img));
            run_ok(
                Command::new("mkfs.ext4")
                    .args(["-q", "-F", "-m", "0"])
                    .arg(&img),
            );
            run_ok(
                Command::new("mount")
                    .args(["-o", "loop"])
                    .arg(&img)
                    .arg(me.dir.join("data")),
            );
        }
        std::fs::write(
            me.dir.join("daemon.json"),
            std::fs::read("/etc/docker/daemon.json").unwrap(),
        )
        .unwrap();
        let d = me.dir.display();
        std::fs::write(
            me.dir.join("containerd.toml"),
            format!(
                "version = 2\nroot = \"{d}/ctd-root\"\nstate = \"{d}/ctd-state\"\n\
                 disabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n\
                 [grpc]\n  address = \"{d}/c.sock\"\n[ttrpc]\n  address = \"{d}/c.sock.ttrpc\"\n\
                 [debug]\n  address = \"\"\n[metrics]\n  address = \"\"\n\
                 [plugins.\"io.containerd.internal.v1.opt\"]\n  path = \"{d}/ctd-opt\"\n"
            ),
        )
        .unwrap();
        let log = std::fs::File::create(me.dir.join("containerd.log")).unwrap();
        me.containerd = Some(
            Command::new("containerd")
                .arg("--config")
                .arg(me.dir.join("containerd.toml"))
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .expect("containerd is not installed"),
        );
        let t = Instant::now();
        while !me.dir.join("c.sock").exists() {
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "the private containerd did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        me.start_dockerd();
        me.load_images();
        me
    }

    /// `DOCKER_HOST` for this daemon.
    pub fn host(&self) -> String {
        format!("unix://{}/d.sock", self.dir.display())
    }

    /// A `docker` CLI command aimed at this daemon.
    pub fn cli(&self) -> Command {
        let mut c = Command::new("docker");
        c.arg("-H").arg(self.host());
        c
    }

    /// Whether dockerd answers now.
    pub fn answers(&self) -> bool {
        self.cli()
            .args(["version", "--format", "{{.Server.Version}}"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    }

    /// Starts dockerd (after a kill too) and waits until it answers; returns
    /// how long that took.
    pub fn start_dockerd(&mut self) -> Duration {
        assert!(self.dockerd.is_none(), "dockerd is already running");
        let _ = std::fs::remove_file(self.dir.join("d.pid"));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("dockerd.log"))
            .unwrap();
        let d = &self.dir;
        let t = Instant::now();
        self.dockerd = Some(
            // In its own network namespace: a dockerd without a bridge
            // deletes any `docker0` it sees, which would take the host
            // dockerd's default network from every test after this one.
            Command::new("unshare")
                .args(["--net", "--", "dockerd"])
                .arg("-H")
                .arg(self.host())
                .arg("--data-root")
                .arg(d.join("data"))
                .arg("--exec-root")
                .arg(d.join("x"))
                .arg("--pidfile")
                .arg(d.join("d.pid"))
                .arg("--containerd")
                .arg(d.join("c.sock"))
                .arg("--config-file")
                .arg(d.join("daemon.json"))
                .args([
                    // Debug logs name every API call (see `api_calls`).
                    "--debug",
                    "--bridge=none",
                    "--iptables=false",
                    "--ip-masq=false",
                    "--ip6tables=false",
                ])
                .args(&self.dockerd_args)
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .expect("dockerd is not installed"),
        );
        while !self.answers() {
            if let Some(Ok(Some(status))) = self.dockerd.as_mut().map(|c| c.try_wait()) {
                panic!(
                    "the private dockerd exited ({status}): {}",
                    tail(&self.dir.join("dockerd.log"))
                );
            }
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "the private dockerd did not answer within 60 s: {}",
                tail(&self.dir.join("dockerd.log"))
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        t.elapsed()
    }

    /// SIGKILLs dockerd (containerd and the containers' shims live on).
    pub fn kill_dockerd(&mut self) {
        let mut c = self.dockerd.take().expect("dockerd is not running");
        c.kill().unwrap();
        c.wait().unwrap();
    }

    /// Stops dockerd gracefully (SIGTERM: it stops running containers, as a
    /// `systemctl restart docker` does with live-restore off).
    pub fn stop_dockerd(&mut self) {
        let mut c = self.dockerd.take().expect("dockerd is not running");
        stop(&mut c, Duration::from_secs(30));
    }

    /// Registers `path` as the runtime `name` with `args` (replacing any
    /// registration of that name) and restarts dockerd to take it.
    #[allow(dead_code, reason = "only the impostor test registers a runtime")]
    pub fn register_runtime(&mut self, name: &str, path: &Path, args: &[&str]) {
        let file = self.dir.join("daemon.json");
        let mut json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        json["runtimes"][name] = serde_json::json!({ "path": path, "runtimeArgs": args });
        std::fs::write(&file, json.to_string()).unwrap();
        self.stop_dockerd();
        self.start_dockerd();
    }

    /// Copies the plimsoll images in from the host's dockerd (IDs kept).
    pub fn load_images(&self) {
        let mut save = Command::new("docker")
            .arg("save")
            .args(IMAGES)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let out = save.stdout.take().unwrap();
        let load = self
            .cli()
            .args(["load", "-q"])
            .stdin(out)
            .stdout(Stdio::null())
            .output()
            .unwrap();
        assert!(save.wait().unwrap().success(), "docker save failed");
        assert!(
            load.status.success(),
            "docker load into the private daemon failed: {}",
            String::from_utf8_lossy(&load.stderr)
        );
    }

    /// How many API calls dockerd has logged whose method and path contain
    /// `method` and `path` (`Calling POST /v1.41/containers/create?…`).
    pub fn api_calls(&self, method: &str, path: &str) -> usize {
        let log = std::fs::read_to_string(self.dir.join("dockerd.log")).unwrap_or_default();
        log.lines()
            .filter(|l| l.contains(&format!("Calling {method} ")) && l.contains(path))
            .count()
    }

    /// Names of containers carrying plimsoll's instance label (any state).
    pub fn plimsoll_containers(&self) -> Vec<String> {
        run_ok(self.cli().args([
            "ps",
            "-a",
            "--filter",
            "label=io.plimsoll.instance",
            "--format",
            "{{.Names}}",
        ]))
        .lines()
        .map(str::to_owned)
        .collect()
    }

    /// Waits until no container carries plimsoll's instance label (their
    /// removal follows the answer), failing with the leftovers after `within`.
    pub fn assert_none_left(&self, what: &str, within: std::time::Duration) {
        let t = std::time::Instant::now();
        loop {
            let left = self.plimsoll_containers();
            if left.is_empty() {
                return;
            }
            assert!(
                t.elapsed() < within,
                "{what}: containers left after {within:?}: {left:?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }

    /// The image ID `reference` names here, if present.
    pub fn image_id(&self, reference: &str) -> Option<String> {
        let out = self
            .cli()
            .args(["image", "inspect", "--format", "{{.Id}}", reference])
            .output()
            .unwrap();
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    /// Fills the data root's filesystem (to ENOSPC); returns the filler path.
    pub fn fill_data_root(&self) -> PathBuf {
        let filler = self.dir.join("data").join("filler");
        let avail = run_ok(
            Command::new("df")
                .args(["--output=avail", "-B1"])
                .arg(self.dir.join("data")),
        );
        let avail: u64 = avail.lines().nth(1).unwrap().trim().parse().unwrap();
        run_ok(
            Command::new("fallocate")
                .arg("-l")
                .arg(avail.saturating_sub(32 << 20).to_string())
                .arg(&filler),
        );
        // Whatever fallocate's rounding left: write until the disk refuses.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&filler)
            .unwrap();
        let block = vec![0u8; 64 * 1024];
        while f.write_all(&block).is_ok() {}
        let _ = f.sync_all();
        filler
    }

    fn remove_all_containers(&self) {
        let ids = self.cli().args(["ps", "-aq"]).output();
        if let Ok(out) = ids {
            for id in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                let _ = self
                    .cli()
                    .args(["rm", "-f", id])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
        }
    }
}

impl Drop for PrivateDocker {
    fn drop(&mut self) {
        // Free a filled disk first, so dockerd can restart and clean up.
        let _ = std::fs::remove_file(self.dir.join("data").join("filler"));
        if self.dockerd.is_none() {
            let dir = self.dir.clone();
            let restarted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.start_dockerd();
            }));
            if restarted.is_err() {
                eprintln!("teardown: the private dockerd in {dir:?} did not restart");
            }
        }
        if self.answers() {
            self.remove_all_containers();
        }
        if let Some(mut c) = self.dockerd.take() {
            stop(&mut c, Duration::from_secs(15));
        }
        // Shims of this containerd (their -address names our directory).
        let needle = self.dir.to_string_lossy().into_owned();
        if let Ok(procs) = std::fs::read_dir("/proc") {
            for p in procs.flatten() {
                let Ok(pid) = p.file_name().to_string_lossy().parse::<i32>() else {
                    continue;
                };
                let Ok(cmd) = std::fs::read(p.path().join("cmdline")) else {
                    continue;
                };
                let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
                if cmd.contains("containerd-shim") && cmd.contains(&needle) {
                    let _ = Command::new("kill")
                        .args(["-KILL", &pid.to_string()])
                        .status();
                }
            }
        }
        if let Some(mut c) = self.containerd.take() {
            stop(&mut c, Duration::from_secs(10));
        }
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
        let mut points: Vec<&str> = mounts
            .lines()
            .filter_map(|l| l.split_whitespace().nth(1))
            .filter(|m| m.starts_with(needle.as_str()))
            .collect();
        points.sort_by_key(|m| std::cmp::Reverse(m.len()));
        for m in points {
            let _ = Command::new("umount").args(["-l", m]).status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The last lines of a log file, for a failure message.
pub fn tail(p: &Path) -> String {
    let s = std::fs::read_to_string(p).unwrap_or_default();
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}
