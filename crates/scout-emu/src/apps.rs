//! The scenario's applications (`apps:`): commands started in a namespace at a given time, their
//! output kept in the run (`apps/NAME.out`, `apps/NAME.err`), ended with the emulation.
//!
//! Each runs as `ip netns exec NS sh -c CMD` in a process group of its own, with `SCOUT_DN` and
//! `SCOUT_UE` set to the DN's and the UE's IPv4 address and, in a UE's namespace, `SCOUT_FEED` to
//! the UE's live feed socket (`crate::feed`). At the end every group still running gets
//! SIGTERM, then SIGKILL after 2 s; `run.json` `apps` lists each with its exit status.

use std::fs::File;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use scout_sim::scenario::AppSpec;
use serde_json::{json, Value};

use crate::netns;
use crate::EmuError;

struct App {
    spec: AppSpec,
    name: String,
    ns: String,
    child: Option<Child>,
    /// When it started (ns since the emulation's start), and its exit status once it ended.
    started_ns: Option<i64>,
    status: Option<std::process::ExitStatus>,
    /// The emulation ends when this one does (`--shell`).
    ends_emulation: bool,
}

pub struct Apps {
    apps: Vec<App>,
    dir: PathBuf,
}

impl Apps {
    /// `namespaces`: the DN's, then one per UE. `shell`: an interactive shell in UE 0's namespace
    /// on the caller's terminal, which ends the emulation when it exits.
    pub fn new(specs: &[AppSpec], run_dir: &Path, namespaces: &[String], shell: bool) -> Apps {
        let mut apps: Vec<App> = specs
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let first = s.cmd.split_whitespace().next().unwrap_or("app");
                let base = first.rsplit('/').next().unwrap_or(first);
                let name = s.name.clone().unwrap_or_else(|| format!("{i}-{base}"));
                let ns = match s.ue() {
                    Some(u) => namespaces.get(u as usize + 1),
                    None => namespaces.first(),
                };
                App {
                    spec: s.clone(),
                    name: sanitize(&name),
                    ns: ns.cloned().unwrap_or_default(),
                    child: None,
                    started_ns: None,
                    status: None,
                    ends_emulation: false,
                }
            })
            .collect();
        if shell {
            let sh = std::env::var("SHELL").unwrap_or_else(|_| "/bin/bash".into());
            apps.push(App {
                spec: AppSpec { name: Some("shell".into()), ns: "ue0".into(), at_s: 0.0, cmd: sh },
                name: "shell".into(),
                ns: namespaces.get(1).cloned().unwrap_or_default(),
                child: None,
                started_ns: None,
                status: None,
                ends_emulation: true,
            });
        }
        Apps { apps, dir: run_dir.join("apps") }
    }

    /// Starts the apps due at `now_ns` and notes those that ended; returns true when an app that
    /// ends the emulation has ended.
    pub fn poll(&mut self, now_ns: i64) -> Result<bool, EmuError> {
        let mut end = false;
        for a in &mut self.apps {
            if a.started_ns.is_none() && now_ns as f64 >= a.spec.at_s * 1e9 {
                a.start(&self.dir, now_ns)?;
            }
            if let Some(c) = a.child.as_mut() {
                if let Ok(Some(st)) = c.try_wait() {
                    a.status = Some(st);
                    a.child = None;
                    end |= a.ends_emulation;
                }
            }
        }
        Ok(end)
    }

    /// Ends every app still running and returns what each did, for `run.json`.
    pub fn finish(&mut self) -> Value {
        for a in &self.apps {
            if let Some(c) = &a.child {
                // SAFETY: kill(2) of the app's own process group (it was made its leader).
                unsafe { libc::kill(-(c.id() as i32), libc::SIGTERM) };
            }
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        for a in &mut self.apps {
            if let Some(mut c) = a.child.take() {
                loop {
                    match c.try_wait() {
                        Ok(Some(st)) => {
                            a.status = Some(st);
                            break;
                        }
                        Ok(None) if std::time::Instant::now() < deadline => {
                            std::thread::sleep(std::time::Duration::from_millis(10))
                        }
                        _ => {
                            // SAFETY: as above.
                            unsafe { libc::kill(-(c.id() as i32), libc::SIGKILL) };
                            a.status = c.wait().ok();
                            break;
                        }
                    }
                }
            }
        }
        Value::Array(
            self.apps
                .iter()
                .map(|a| {
                    json!({
                        "name": a.name, "ns": a.spec.ns, "namespace": a.ns, "cmd": a.spec.cmd, "at_s": a.spec.at_s,
                        "started_s": a.started_ns.map(|t| t as f64 / 1e9),
                        "exit_code": a.status.and_then(|s| s.code()),
                        "signal": a.status.and_then(|s| s.signal()),
                        "stdout": (!a.ends_emulation && a.started_ns.is_some()).then(|| format!("apps/{}.out", a.name)),
                        "stderr": (!a.ends_emulation && a.started_ns.is_some()).then(|| format!("apps/{}.err", a.name)),
                    })
                })
                .collect(),
        )
    }
}

impl App {
    fn start(&mut self, dir: &Path, now_ns: i64) -> Result<(), EmuError> {
        self.started_ns = Some(now_ns);
        let ue = self.spec.ue().unwrap_or(0);
        let mut cmd = Command::new("ip");
        if self.ends_emulation {
            // The user's shell, on the caller's terminal (and in its process group, for job
            // control).
            cmd.args(["netns", "exec", &self.ns, &self.spec.cmd]);
        } else {
            cmd.args(["netns", "exec", &self.ns, "sh", "-c", &self.spec.cmd]);
        }
        cmd.env("SCOUT_DN", netns::DN_ADDR4.to_string()).env("SCOUT_UE", netns::ue_addr4(ue).to_string());
        // The RAN feed is the UE's view: a server in the DN sees no modem (as `scout exec`).
        if self.spec.ue().is_some() {
            cmd.env("SCOUT_FEED", crate::feed::socket(dir.parent().unwrap_or(dir), ue));
        } else {
            cmd.env_remove("SCOUT_FEED");
        }
        if !self.ends_emulation {
            std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
            let (o, e) = (dir.join(format!("{}.out", self.name)), dir.join(format!("{}.err", self.name)));
            cmd.stdin(Stdio::null())
                .stdout(File::create(&o).map_err(|x| io_err(&o, x))?)
                .stderr(File::create(&e).map_err(|x| io_err(&e, x))?)
                .process_group(0);
        }
        let child = cmd.spawn().map_err(|e| EmuError::Setup {
            what: format!("app {} ({})", self.name, self.spec.cmd),
            message: e.to_string(),
        })?;
        self.child = Some(child);
        Ok(())
    }
}

fn io_err(p: &Path, e: std::io::Error) -> EmuError {
    EmuError::Setup { what: p.display().to_string(), message: e.to_string() }
}

/// A name usable as a file name: letters, digits, `-`, `_` and `.`.
fn sanitize(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect()
}
