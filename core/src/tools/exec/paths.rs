//! What a path in a command stands for: the whole file system, a home directory, a disk
//! device, a credentials file, a start-up file. Works on the text as written (nothing is
//! resolved on disk), so `~`, `$HOME` and `${HOME}` all count as the home directory.

/// Top-level directories whose loss breaks the system.
const SYSTEM_DIRS: &[&str] = &[
    "bin",
    "boot",
    "dev",
    "etc",
    "home",
    "lib",
    "lib32",
    "lib64",
    "libx32",
    "opt",
    "proc",
    "root",
    "run",
    "sbin",
    "snap",
    "srv",
    "sys",
    "usr",
    "var",
    "mnt",
    "media",
    "Users",
    "System",
    "Applications",
    "Library",
    "Volumes",
    "private",
];

/// `$HOME` and `${HOME}` as `~`; empty and `.` parts dropped, `a/..` folded, trailing
/// `/*` dropped (`/*` is `/`).
pub(super) fn normalize(path: &str) -> String {
    let mut path = path.to_string();
    for home in ["${HOME}", "$HOME"] {
        if let Some(rest) = path.strip_prefix(home) {
            path = format!("~{rest}");
        }
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/').filter(|p| !p.is_empty() && *p != ".") {
        match parts.last() {
            Some(last) if part == ".." && *last != ".." => {
                parts.pop();
            }
            _ => parts.push(part),
        }
    }
    while parts.last() == Some(&"*") {
        parts.pop();
    }
    let joined = parts.join("/");
    if path.starts_with('/') {
        format!("/{joined}")
    } else {
        joined
    }
}

/// What deleting `path` (recursively) would take with it, if it is a protected place.
pub(super) fn protected(path: &str) -> Option<String> {
    let found = protected_exact(path);
    if found.is_some() {
        return found;
    }
    // `{a,b}` alternatives, in case a shell expands braces.
    if path.contains('{') && path.contains(',') {
        for piece in path.split(['{', ',', '}']) {
            if let Some(what) = protected_exact(piece) {
                return Some(what);
            }
        }
    }
    // `"$DIR"/*` deletes `/*` when DIR is empty.
    if let Some(var_path) = path.strip_prefix('$') {
        let name_end = var_path
            .find(|c: char| !(c.is_ascii_alphanumeric() || "_{}".contains(c)))
            .unwrap_or(var_path.len());
        let (name, rest) = var_path.split_at(name_end);
        if rest.starts_with('/') && !matches!(name, "HOME" | "{HOME}") {
            let what = protected_exact(rest)?;
            return Some(format!("{what} if `${name}` is empty"));
        }
    }
    None
}

fn protected_exact(path: &str) -> Option<String> {
    let path = normalize(path);
    if path == "/" {
        return Some("the whole file system".into());
    }
    if path.split('/').all(|part| part == "..") && !path.is_empty() {
        return Some("the folders above the working directory (the workspace)".into());
    }
    if path.starts_with('~') && !path.contains('/') {
        return Some("a home directory".into());
    }
    let parts: Vec<&str> = path.strip_prefix('/')?.split('/').collect();
    match parts.as_slice() {
        [dir] if SYSTEM_DIRS.contains(dir) => Some(format!("the system directory `/{dir}`")),
        ["home" | "Users", _] => Some("a home directory".into()),
        _ => None,
    }
}

/// A disk, partition or other block device (`/dev/sda1`, `/dev/nvme0n1`).
pub(super) fn block_device(path: &str) -> bool {
    let Some(name) = path.strip_prefix("/dev/") else {
        return false;
    };
    const DISKS: &[&str] = &[
        "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "rdisk", "md", "dm-", "mapper/", "loop",
        "nbd",
    ];
    DISKS.iter().any(|disk| name.starts_with(disk))
}

/// Which credentials `path` holds, if it is a well-known secrets file.
pub(super) fn secret(path: &str) -> Option<&'static str> {
    let path = normalize(path);
    let path = path.as_str();
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let name = parts.last().copied().unwrap_or_default();
    let within = |dirs: &[&str]| parts.windows(dirs.len()).any(|w| w == dirs);
    if path.starts_with("/etc/")
        && matches!(
            name,
            "shadow" | "gshadow" | "shadow-" | "gshadow-" | "master.passwd"
        )
    {
        return Some("password hashes");
    }
    let key_file = matches!(
        name.trim_end_matches("_sk"),
        "id_rsa" | "id_dsa" | "id_ecdsa" | "id_ed25519"
    );
    if key_file || within(&[".ssh"]) && !matches!(name, "known_hosts" | "config") {
        return Some("SSH keys");
    }
    if name == ".security.yml" || name == "pincer.db" {
        return Some("Pincer's secrets");
    }
    if let Some(i) = parts.iter().position(|p| *p == ".pincer")
        && parts.get(i + 1).is_none_or(|next| *next != "workspace")
    {
        return Some("Pincer's secrets");
    }
    const STORES: &[(&[&str], &str)] = &[
        (&[".gnupg"], "GPG keys"),
        (&[".password-store"], "the password store"),
        (&[".aws"], "AWS credentials"),
        (&[".config", "gcloud"], "Google Cloud credentials"),
        (&[".azure"], "Azure credentials"),
        (&[".kube"], "Kubernetes credentials"),
        (&[".docker", "config.json"], "Docker registry credentials"),
        (&[".config", "gh"], "the GitHub CLI token"),
        (&[".cargo", "credentials.toml"], "the crates.io token"),
        (&[".cargo", "credentials"], "the crates.io token"),
    ];
    if let Some((_, what)) = STORES.iter().find(|(dirs, _)| within(dirs)) {
        return Some(what);
    }
    match name {
        ".netrc" | ".pgpass" | ".git-credentials" | ".npmrc" | ".pypirc" => {
            Some("stored passwords or tokens")
        }
        _ => None,
    }
}

/// A file or folder whose contents run at log-in, at boot or on a schedule.
pub(super) fn startup(path: &str) -> bool {
    const RC_FILES: &[&str] = &[
        ".bashrc",
        ".bash_profile",
        ".bash_login",
        ".bash_logout",
        ".profile",
        ".zshrc",
        ".zprofile",
        ".zshenv",
        ".zlogin",
        ".xprofile",
        ".xinitrc",
        ".xsessionrc",
        "config.fish",
        "authorized_keys",
        "authorized_keys2",
        "rc.local",
        "crontab",
    ];
    const DIRS: &[&str] = &[
        "/etc/profile",
        "/etc/bash.bashrc",
        "/etc/environment",
        "/etc/init.d",
        "/etc/cron",
        "/etc/anacrontab",
        "/var/spool/cron",
        "/etc/systemd",
        "/lib/systemd",
        "/usr/lib/systemd",
        "/etc/update-motd.d",
        "/Library/LaunchAgents",
        "/Library/LaunchDaemons",
        "/etc/xdg/autostart",
    ];
    let name = path.rsplit('/').next().unwrap_or_default();
    RC_FILES.contains(&name)
        || DIRS.iter().any(|dir| path.starts_with(dir))
        || [
            ".config/systemd/",
            ".config/autostart/",
            "Library/LaunchAgents/",
        ]
        .iter()
        .any(|dir| path.contains(dir))
}

/// A file that decides who may become whom (`/etc/sudoers`, `/etc/passwd`).
pub(super) fn privilege_file(path: &str) -> bool {
    const FILES: &[&str] = &[
        "/etc/sudoers",
        "/etc/passwd",
        "/etc/shadow",
        "/etc/group",
        "/etc/gshadow",
        "/etc/doas.conf",
        "/etc/ld.so.preload",
        "/etc/pam.d",
    ];
    FILES.iter().any(|file| path.starts_with(file))
}

/// Where the kernel and system configuration live (`/etc`, `/boot`, `/proc/sys`, `/sys`).
pub(super) fn system_config(path: &str) -> bool {
    [
        "/etc/",
        "/boot/",
        "/proc/sys",
        "/proc/sysrq-trigger",
        "/sys/",
    ]
    .iter()
    .any(|dir| path.starts_with(dir))
}

/// `[user@]host:path` or `scheme://…`, as in scp and rsync arguments.
pub(super) fn remote(arg: &str) -> bool {
    if arg.contains("://") {
        return true;
    }
    let Some((host, _)) = arg.split_once(':') else {
        return false;
    };
    !host.is_empty() && !host.contains('/') && !arg.starts_with('.') && !arg.starts_with('-')
}
