//! `pincer service install | uninstall | status`: the gateway as a systemd service. A
//! user unit (`~/.config/systemd/user/pincer.service`, or under `$XDG_CONFIG_HOME`)
//! or, with `--system`, a system unit (`/etc/systemd/system/pincer.service`), running
//! this binary with this home (`unit`). systemctl and loginctl are called only where
//! systemd runs (`/run/systemd/system` exists); elsewhere the unit is still written,
//! the command says systemd is not running, and prints the command line to run the
//! gateway with instead. It never edits a unit it did not write, nor any other.

mod unit;

use std::path::{Path, PathBuf};
use std::process::{Command as Process, ExitCode};

use anyhow::Context as _;

use crate::home::Home;
use unit::{Unit, logs_command, shell_line};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Write pincer.service for this binary and home, then (where systemd runs) enable
    /// and start it, and keep the user's services running after logout (lingering)
    Install(InstallArgs),
    /// Stop and disable the service (where systemd runs), then remove pincer.service
    Uninstall(Where),
    /// Whether pincer.service is installed, and (where systemd runs) whether it is active
    Status(Where),
}

/// Which unit: the user's or the system's.
#[derive(Debug, Clone, clap::Args)]
pub struct Where {
    /// A system unit in /etc/systemd/system (needs root) instead of a user unit
    #[arg(long)]
    pub system: bool,
    /// Write (or look for) pincer.service in DIR instead, and call no systemctl: for
    /// packaging, or to read the unit before installing it
    #[arg(long, value_name = "DIR")]
    pub unit_dir: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    #[command(flatten)]
    pub place: Where,
    /// The gateway's memory limit (systemd's MemoryMax=: 512M, 2G, 50%, infinity)
    #[arg(long, value_name = "SIZE", default_value = "1G")]
    pub memory_max: String,
    /// The user a system unit runs the gateway as (User=); without it, root
    #[arg(long, value_name = "USER", requires = "system")]
    pub run_as: Option<String>,
}

const UNIT_NAME: &str = "pincer.service";

pub(super) async fn run(home: &Home, command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Install(args) => install(home, args),
        Command::Uninstall(place) => uninstall(&place),
        Command::Status(place) => status(home, &place),
    }
}

/// Where systemd runs: it keeps `/run/systemd/system` while it is the init system
/// (what `sd_booted()` checks).
fn systemd_running() -> bool {
    Path::new("/run/systemd/system").is_dir()
}

/// Where the unit file goes.
fn unit_path(place: &Where) -> anyhow::Result<PathBuf> {
    if let Some(dir) = &place.unit_dir {
        return Ok(dir.join(UNIT_NAME));
    }
    if place.system {
        return Ok(PathBuf::from("/etc/systemd/system").join(UNIT_NAME));
    }
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))
        .context("neither XDG_CONFIG_HOME nor HOME is set, so there is no place for a user unit; set HOME, or use --system or --unit-dir DIR")?;
    Ok(config.join("systemd/user").join(UNIT_NAME))
}

/// Whether systemctl may be called for this unit: systemd runs, and the unit is in
/// its own directory (not `--unit-dir`).
fn manages(place: &Where) -> bool {
    place.unit_dir.is_none() && systemd_running()
}

fn install(home: &Home, args: InstallArgs) -> anyhow::Result<ExitCode> {
    if !unit::valid_memory_max(&args.memory_max) {
        anyhow::bail!(
            "--memory-max {} is not a size systemd reads; give bytes with K, M, G or T (512M, 2G), a percentage (50%), or infinity",
            args.memory_max
        );
    }
    // The service would only fail to start again and again without a configuration.
    let (config, _) = super::load(home)?;
    super::ensure_home(home)?;
    let exe = std::env::current_exe()
        .and_then(|exe| exe.canonicalize())
        .context("cannot find this pincer binary's path for ExecStart")?;
    let home_dir = super::absolute(&home.dir);
    let default_config = home.dir.join("config.toml");
    let config_file =
        (home.config_file != default_config).then(|| super::absolute(&home.config_file));
    let workspace = super::absolute(&home.workspace(&config));
    let mut writable = vec![home_dir.clone()];
    if !workspace.starts_with(&home_dir) {
        writable.push(workspace);
    }
    let place = args.place;
    let unit = Unit {
        exe,
        home: home_dir,
        config: config_file,
        writable,
        memory_max: args.memory_max,
        system: place.system,
        run_as: args.run_as,
    };
    let path = unit_path(&place)?;
    let replaced = path.exists();
    write_unit(&path, &unit.render(), place.system)?;
    println!(
        "{} {}",
        if replaced { "Replaced" } else { "Wrote" },
        path.display()
    );
    if place.system && unit.run_as.is_none() {
        println!(
            "Note: without --run-as USER the gateway runs as root; a user of its own (with its home readable and writable by it) is safer."
        );
    }
    if place.unit_dir.is_some() {
        println!("Nothing was enabled (--unit-dir): copy it where systemd reads units.");
        return Ok(ExitCode::SUCCESS);
    }
    if !systemd_running() {
        println!(
            "systemd is not running on this machine (no /run/systemd/system), so nothing was enabled or started."
        );
        println!("Run the gateway yourself instead:");
        println!("  {}", shell_line(&unit.command()));
        return Ok(ExitCode::SUCCESS);
    }
    let scope = Scope::of(place.system);
    scope.systemctl(&["daemon-reload"])?;
    scope.systemctl(&["enable", UNIT_NAME])?;
    if !place.system {
        linger();
    }
    if home.gateway_running() {
        println!(
            "A gateway already runs for {} outside systemd; stop it, then start the service: {}",
            home.dir.display(),
            scope.line(&["start", UNIT_NAME])
        );
    } else {
        scope.systemctl(&["restart", UNIT_NAME])?;
        println!("Enabled and started {UNIT_NAME}.");
    }
    println!("Status: {}", scope.line(&["status", UNIT_NAME]));
    println!("Logs:   {}", logs_command(place.system));
    Ok(ExitCode::SUCCESS)
}

fn uninstall(place: &Where) -> anyhow::Result<ExitCode> {
    let path = unit_path(place)?;
    if !path.exists() {
        println!("No {} here; nothing to remove.", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    if manages(place) {
        Scope::of(place.system).systemctl(&["disable", "--now", UNIT_NAME])?;
    }
    std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
    if manages(place) {
        Scope::of(place.system).systemctl(&["daemon-reload"])?;
    }
    println!("Removed {}", path.display());
    Ok(ExitCode::SUCCESS)
}

fn status(home: &Home, place: &Where) -> anyhow::Result<ExitCode> {
    let path = unit_path(place)?;
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            println!("Unit: {} (installed)", path.display());
            if let Some(exec) = text.lines().find(|l| l.starts_with("ExecStart=")) {
                println!("  {exec}");
            }
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => println!(
            "Unit: {} (not installed; `pincer service install{}` writes it)",
            path.display(),
            if place.system { " --system" } else { "" }
        ),
        Err(err) => return Err(err).with_context(|| format!("cannot read {}", path.display())),
    }
    if manages(place) {
        let scope = Scope::of(place.system);
        let active = scope.query(&["is-active", UNIT_NAME]);
        println!("systemd: {UNIT_NAME} is {active}");
        println!("Logs: {}", logs_command(place.system));
    } else if place.unit_dir.is_none() {
        println!("systemd: not running on this machine (no /run/systemd/system)");
    }
    println!(
        "Gateway for {}: {}",
        home.dir.display(),
        if home.gateway_running() {
            "running"
        } else {
            "not running"
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// Write the unit (mode 0644: systemd reads it, nobody else writes it).
fn write_unit(path: &Path, text: &str, system: bool) -> anyhow::Result<()> {
    let fix = if system {
        " (a system unit needs root: sudo pincer service install --system)"
    } else {
        ""
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create {}{fix}", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}{fix}", path.display()))?;
    crate::home::set_mode(path, 0o644)
        .with_context(|| format!("cannot make {} readable (chmod 644)", path.display()))
}

/// Keep the user's manager (and so the service) running without a login session.
fn linger() {
    match Process::new("loginctl").arg("enable-linger").status() {
        Ok(status) if status.success() => {
            println!("Lingering is on: the service runs while you are logged out.");
        }
        Ok(_) | Err(_) => println!(
            "Could not turn lingering on, so the service stops when you log out; run `sudo loginctl enable-linger $USER`."
        ),
    }
}

/// `systemctl` or `systemctl --user`.
struct Scope {
    user: bool,
}

impl Scope {
    fn of(system: bool) -> Scope {
        Scope { user: !system }
    }

    fn args<'a>(&self, args: &[&'a str]) -> Vec<&'a str> {
        let mut all = Vec::with_capacity(args.len() + 1);
        if self.user {
            all.push("--user");
        }
        all.extend_from_slice(args);
        all
    }

    /// The command line, to print.
    fn line(&self, args: &[&str]) -> String {
        format!("systemctl {}", self.args(args).join(" "))
    }

    /// Run systemctl; a failure names the command and what it said.
    fn systemctl(&self, args: &[&str]) -> anyhow::Result<()> {
        let line = self.line(args);
        let output = Process::new("systemctl")
            .args(self.args(args))
            .output()
            .with_context(|| format!("cannot run `{line}`"))?;
        if output.status.success() {
            return Ok(());
        }
        let said = String::from_utf8_lossy(&output.stderr).trim().to_string();
        let hint = if self.user {
            " (systemctl --user needs your own login session: log in as this user directly, not through su or sudo; or install a system unit with --system)"
        } else {
            ""
        };
        anyhow::bail!("`{line}` failed: {said}{hint}")
    }

    /// What systemctl prints (`is-active` answers `inactive` with a failure code).
    fn query(&self, args: &[&str]) -> String {
        match Process::new("systemctl").args(self.args(args)).output() {
            Ok(output) => {
                let said = String::from_utf8_lossy(&output.stdout).trim().to_string();
                if said.is_empty() {
                    "unknown".into()
                } else {
                    said
                }
            }
            Err(err) => format!("unknown (cannot run systemctl: {err})"),
        }
    }
}
