//! Reading a container's own mount table (`/proc/self/mountinfo`) and judging
//! it against what a run is promised.
//!
//! The rule: the root is read-only; every writable mount is either a promised
//! tmpfs of exactly the promised size marked noexec and nosuid, or one of the
//! pseudo filesystems a runtime always provides (proc, the root-owned `/dev`
//! tmpfs, devpts, the cgroup tmpfs, and docker's masked-path files), which the
//! write test must then find unwritable by the guest. What this does not cover:
//! whether the kernel honours the flags it reports — the write and exec tests
//! do that behaviourally.

use crate::provider::docker::DockerRuntime;
use crate::provider::docker::lockdown::Promise;

/// One line of mountinfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mount {
    /// The path inside the filesystem that is mounted (`/null` for masked paths).
    pub root: String,
    /// Where it is mounted.
    pub point: String,
    /// Per-mount options (`ro`/`rw`, `noexec`, `nosuid`, …).
    pub options: Vec<String>,
    /// The filesystem type.
    pub fstype: String,
    /// Per-superblock options (`size=…`, `mode=…`).
    pub super_options: Vec<String>,
}

impl Mount {
    /// Whether the mount is writable (per-mount `rw`).
    pub fn writable(&self) -> bool {
        self.options.iter().any(|o| o == "rw")
    }

    fn has(&self, opt: &str) -> bool {
        self.options.iter().any(|o| o == opt) || self.super_options.iter().any(|o| o == opt)
    }

    /// The tmpfs size option in bytes, if any (`size=16384k`, `size=16m`, `size=16777216`).
    pub fn size_bytes(&self) -> Option<u64> {
        let v = self
            .super_options
            .iter()
            .chain(&self.options)
            .find_map(|o| o.strip_prefix("size="))?;
        let (num, mult) = match v.as_bytes().last()? {
            b'k' | b'K' => (&v[..v.len() - 1], 1u64 << 10),
            b'm' | b'M' => (&v[..v.len() - 1], 1 << 20),
            b'g' | b'G' => (&v[..v.len() - 1], 1 << 30),
            _ => (v, 1),
        };
        num.parse::<u64>().ok().map(|n| n * mult)
    }

    /// A path docker masks by binding `/dev/null` over it.
    pub fn is_masked_file(&self) -> bool {
        self.root == "/null" && self.fstype == "tmpfs"
    }
}

/// Undoes mountinfo's octal escapes (`\040` for a space).
pub(crate) fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses `/proc/self/mountinfo`. Lines it cannot read are an error: a mount
/// table the proof cannot understand proves nothing.
pub(crate) fn parse(text: &str) -> Result<Vec<Mount>, String> {
    let mut mounts = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let sep = fields
            .iter()
            .position(|f| *f == "-")
            .ok_or_else(|| format!("unreadable mountinfo line: {line:?}"))?;
        if sep < 6 || fields.len() < sep + 3 {
            return Err(format!("unreadable mountinfo line: {line:?}"));
        }
        mounts.push(Mount {
            root: unescape(fields[3]),
            point: unescape(fields[4]),
            options: fields[5].split(',').map(str::to_owned).collect(),
            fstype: fields[sep + 1].to_owned(),
            super_options: fields
                .get(sep + 3)
                .map(|s| s.split(',').map(str::to_owned).collect())
                .unwrap_or_default(),
        });
    }
    if mounts.is_empty() {
        return Err("the mount table is empty".into());
    }
    Ok(mounts)
}

/// The writable pseudo filesystems a runtime provides, by (mount point, type).
/// The guest must not be able to write any of them; the write test checks.
const RUNTIME_WRITABLE: [(&str, &str); 5] = [
    ("/proc", "proc"),
    ("/dev", "tmpfs"),
    ("/dev/pts", "devpts"),
    ("/sys/fs/cgroup", "tmpfs"),
    ("/dev/mqueue", "mqueue"),
];

/// Judges a mount table against the promises. On success returns the mount
/// points the write test must try (every mount but masked files).
pub(crate) fn judge(
    mounts: &[Mount],
    promises: &[Promise],
    runtime: DockerRuntime,
) -> Result<Vec<String>, String> {
    let root = mounts
        .iter()
        .rev()
        .find(|m| m.point == "/")
        .ok_or("no root mount")?;
    if root.writable() || !root.options.iter().any(|o| o == "ro") {
        return Err(format!(
            "the root is not read-only ({})",
            root.options.join(",")
        ));
    }
    for p in promises {
        // The last mount at a point is the visible one.
        let m = mounts
            .iter()
            .rev()
            .find(|m| m.point == p.path)
            .ok_or_else(|| format!("the promised tmpfs {} is not mounted", p.path))?;
        if m.fstype != "tmpfs" || !m.writable() {
            return Err(format!(
                "{} is {} ({}), not a writable tmpfs",
                p.path,
                m.fstype,
                m.options.join(",")
            ));
        }
        if !m.has("noexec") {
            return Err(format!("{} is not marked noexec", p.path));
        }
        // gVisor's mount table reports only ro/rw, noatime and noexec: nosuid is
        // requested all the same, and no_new_privs (checked separately) makes a
        // set-user-ID bit inert either way.
        if !m.has("nosuid") && runtime == DockerRuntime::Runc {
            return Err(format!("{} is not marked nosuid", p.path));
        }
        let want = (p.size_mb as u64) << 20;
        match m.size_bytes() {
            Some(got) if got == want => {}
            got => {
                return Err(format!(
                    "{} has size {:?} bytes, promised {want}",
                    p.path, got
                ));
            }
        }
    }
    let mut points = Vec::new();
    for m in mounts {
        if m.is_masked_file() {
            continue;
        }
        points.push(m.point.clone());
        if !m.writable() || m.point == "/" || promises.iter().any(|p| p.path == m.point) {
            continue;
        }
        let known = RUNTIME_WRITABLE
            .iter()
            .any(|(point, fstype)| m.point == *point && m.fstype == *fstype);
        if !known {
            return Err(format!(
                "unexpected writable mount {} ({}, {})",
                m.point,
                m.fstype,
                m.options.join(",")
            ));
        }
    }
    points.sort();
    points.dedup();
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUNC: &str = "72 48 0:39 / / ro,relatime master:2 - overlay overlay rw,lowerdir=/x
73 72 0:42 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
74 72 0:43 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755
75 74 0:44 / /dev/pts rw,nosuid,noexec,relatime - devpts devpts rw,gid=5,mode=620,ptmxmode=666
76 72 0:45 / /sys ro,nosuid,nodev,noexec,relatime - sysfs sysfs ro
77 76 0:46 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw,mode=755
87 74 0:41 / /dev/mqueue ro,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw,size=4k
88 72 254:0 /usr/bin/tini-static /sbin/docker-init ro,relatime - ext4 /dev/vda rw
89 72 0:47 / /tmp rw,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw,size=16384k
90 72 0:48 / /work rw,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw,size=131072k,mode=1777
92 72 254:0 /var/lib/docker/containers/x/resolv.conf /etc/resolv.conf ro,relatime - ext4 /dev/vda rw
95 74 0:49 / /dev/shm rw,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw,size=16384k,mode=1777
54 73 0:43 /null /proc/keys rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755
";

    const RUNSC: &str = "8 8 0:8 / / ro  - 9p none ro,trans=fd
9 8 0:9 / /tmp rw,noexec  - tmpfs none rw,size=16m
10 8 0:6 / /dev rw  - tmpfs none rw,mode=0755
12 8 0:11 / /proc rw,noexec  - proc none rw
13 8 0:12 / /work rw,noexec  - tmpfs none rw,size=128m,mode=1777
14 10 0:13 / /dev/pts rw,noexec  - devpts none rw
15 10 0:14 / /dev/shm rw,noexec  - tmpfs none rw,size=16m
17 8 0:16 / /run/plimsoll ro  - 9p none ro,trans=fd
";

    fn promises() -> Vec<Promise> {
        vec![
            Promise {
                path: "/tmp",
                size_mb: 16,
            },
            Promise {
                path: "/dev/shm",
                size_mb: 16,
            },
            Promise {
                path: "/work",
                size_mb: 128,
            },
        ]
    }

    #[test]
    fn runc_and_runsc_tables_pass() {
        let points = judge(&parse(RUNC).unwrap(), &promises(), DockerRuntime::Runc).unwrap();
        assert!(points.contains(&"/etc/resolv.conf".to_string()));
        assert!(!points.contains(&"/proc/keys".to_string()));
        judge(&parse(RUNSC).unwrap(), &promises(), DockerRuntime::Runsc).unwrap();
        // Under runc nosuid must show.
        let e = judge(&parse(RUNSC).unwrap(), &promises(), DockerRuntime::Runc).unwrap_err();
        assert!(e.contains("nosuid"), "{e}");
    }

    #[test]
    fn violations_are_named() {
        let bad_size = RUNC.replace("size=131072k", "size=65536k");
        let e = judge(&parse(&bad_size).unwrap(), &promises(), DockerRuntime::Runc).unwrap_err();
        assert!(e.contains("/work has size"), "{e}");
        let rw_root = RUNC.replace("/ / ro,relatime", "/ / rw,relatime");
        assert!(
            judge(&parse(&rw_root).unwrap(), &promises(), DockerRuntime::Runc)
                .unwrap_err()
                .contains("root")
        );
        let exec_tmp = RUNC.replace(
            "/tmp rw,nosuid,nodev,noexec,relatime",
            "/tmp rw,nosuid,nodev,relatime",
        );
        assert!(
            judge(&parse(&exec_tmp).unwrap(), &promises(), DockerRuntime::Runc)
                .unwrap_err()
                .contains("noexec")
        );
        let extra = format!("{RUNC}99 72 254:0 /data /data rw,relatime - ext4 /dev/vda rw\n");
        assert!(
            judge(&parse(&extra).unwrap(), &promises(), DockerRuntime::Runc)
                .unwrap_err()
                .contains("unexpected writable mount /data")
        );
        let missing = RUNC.replace(" /work ", " /elsewhere ");
        assert!(judge(&parse(&missing).unwrap(), &promises(), DockerRuntime::Runc).is_err());
        assert!(parse("garbage").is_err());
    }

    #[test]
    fn sizes_and_escapes() {
        assert_eq!(unescape(r"/a\040b"), "/a b");
        let m = &parse(RUNSC).unwrap()[1];
        assert_eq!(m.size_bytes(), Some(16 << 20));
    }
}
