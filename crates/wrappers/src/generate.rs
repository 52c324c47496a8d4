//! Rendering a service's wrappers and putting them on disk: which template makes which file,
//! templates embedded in the binary or overridden from a folder, and writing only what changed
//! (or, with `--check`, only saying what would change).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::ValueEnum;
use minijinja::{Environment, UndefinedBehavior, Value, context};

use crate::context::Context;

/// What to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum Kind {
    /// One bash script per tool.
    Scripts,
    /// One Python module per service (standard library only).
    Python,
    /// One executable Python CLI per service.
    Cli,
    /// One Claude Code slash command per tool.
    Commands,
    /// One skill folder (SKILL.md) per service.
    Skills,
}

impl Kind {
    pub const ALL: [Kind; 5] = [
        Kind::Scripts,
        Kind::Python,
        Kind::Cli,
        Kind::Commands,
        Kind::Skills,
    ];

    pub fn folder(self) -> &'static str {
        match self {
            Kind::Scripts => "scripts",
            Kind::Python => "python",
            Kind::Cli => "cli",
            Kind::Commands => "commands",
            Kind::Skills => "skills",
        }
    }

    fn template(self) -> &'static str {
        match self {
            Kind::Scripts => "scripts_tool.sh.j2",
            Kind::Python => "python_client.py.j2",
            Kind::Cli => "cli.py.j2",
            Kind::Commands => "command.md.j2",
            Kind::Skills => "skill.md.j2",
        }
    }
}

/// The templates shipped in the binary.
const EMBEDDED: [(&str, &str); 5] = [
    (
        "scripts_tool.sh.j2",
        include_str!("../templates/scripts_tool.sh.j2"),
    ),
    (
        "python_client.py.j2",
        include_str!("../templates/python_client.py.j2"),
    ),
    ("cli.py.j2", include_str!("../templates/cli.py.j2")),
    ("command.md.j2", include_str!("../templates/command.md.j2")),
    ("skill.md.j2", include_str!("../templates/skill.md.j2")),
];

#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error("template {name}: {source:#}")]
    Template {
        name: String,
        source: minijinja::Error,
    },
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

/// The template engine: the embedded templates, each replaced by a file of the same name in
/// `overrides` when there is one.
pub fn environment(overrides: Option<&Path>) -> Result<Environment<'static>, GenerateError> {
    let mut env = Environment::new();
    env.set_syntax(
        minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .keep_trailing_newline(true)
            .build()
            .expect("the default delimiters are valid"),
    );
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    crate::filters::register(&mut env);
    for (name, embedded) in EMBEDDED {
        let source = match overrides.map(|dir| dir.join(name)).filter(|p| p.is_file()) {
            Some(path) => std::fs::read_to_string(&path).map_err(|source| GenerateError::Io {
                path: path.display().to_string(),
                source,
            })?,
            None => embedded.to_owned(),
        };
        env.add_template_owned(name.to_owned(), source)
            .map_err(|source| GenerateError::Template {
                name: name.to_owned(),
                source,
            })?;
    }
    Ok(env)
}

/// One generated file, relative to the output folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    pub path: PathBuf,
    pub content: String,
    pub executable: bool,
}

fn render(env: &Environment<'_>, name: &str, ctx: Value) -> Result<String, GenerateError> {
    env.get_template(name)
        .and_then(|t| t.render(ctx))
        .map_err(|source| GenerateError::Template {
            name: name.to_owned(),
            source,
        })
}

/// Every file of `kinds` for one service, under `<service>/<kind>/`.
pub fn files(
    env: &Environment<'_>,
    ctx: &Context,
    kinds: &[Kind],
) -> Result<Vec<File>, GenerateError> {
    let base = PathBuf::from(&ctx.service.name);
    let service = Value::from(minijinja::value::Serde(ctx));
    let mut out = Vec::new();
    for &kind in kinds {
        let folder = base.join(kind.folder());
        match kind {
            Kind::Scripts | Kind::Commands => {
                for tool in &ctx.tools {
                    let content = render(
                        env,
                        kind.template(),
                        context! { tool => Value::from(minijinja::value::Serde(tool)), ..service.clone() },
                    )?;
                    let (path, executable) = if kind == Kind::Scripts {
                        (folder.join(format!("{}.sh", tool.safe_name)), true)
                    } else {
                        let name = format!("{}-{}.md", ctx.service.name, tool.safe_name);
                        (folder.join(name), false)
                    };
                    out.push(File {
                        path,
                        content,
                        executable,
                    });
                }
            }
            Kind::Python | Kind::Cli | Kind::Skills => {
                let content = render(env, kind.template(), service.clone())?;
                let (path, executable) = match kind {
                    Kind::Python => (
                        folder.join(format!("{}_client.py", ctx.service.safe_name)),
                        false,
                    ),
                    Kind::Cli => (folder.join(&ctx.service.name), true),
                    _ => (folder.join(&ctx.service.name).join("SKILL.md"), false),
                };
                out.push(File {
                    path,
                    content,
                    executable,
                });
            }
        }
    }
    Ok(out)
}

/// How the output folder differs from what was generated.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    pub added: Vec<PathBuf>,
    pub changed: Vec<PathBuf>,
    /// Files in a generated folder that nothing generates any more (a tool was removed).
    pub stale: Vec<PathBuf>,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.changed.is_empty() && self.stale.is_empty()
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> GenerateError + '_ {
    move |source| GenerateError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn files_under(dir: &Path, found: &mut Vec<PathBuf>) -> Result<(), GenerateError> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries {
        let path = entry.map_err(io(dir))?.path();
        if path.is_dir() {
            files_under(&path, found)?;
        } else {
            found.push(path);
        }
    }
    Ok(())
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

/// Compares `files` with `<out>/<service>/<kind>/` for each kind generated; unless `check`,
/// writes what is new or changed and removes what is stale.
pub fn sync(
    out: &Path,
    service: &str,
    kinds: &[Kind],
    files: &[File],
    check: bool,
) -> Result<Changes, GenerateError> {
    let mut changes = Changes::default();
    let wanted: BTreeMap<PathBuf, &File> = files.iter().map(|f| (out.join(&f.path), f)).collect();
    for (path, file) in &wanted {
        match std::fs::read_to_string(path) {
            Ok(existing) if existing == file.content && is_executable(path) == file.executable => {}
            Ok(_) => changes.changed.push(path.clone()),
            Err(_) => changes.added.push(path.clone()),
        }
    }
    for kind in kinds {
        let mut present = Vec::new();
        files_under(&out.join(service).join(kind.folder()), &mut present)?;
        changes
            .stale
            .extend(present.into_iter().filter(|p| !wanted.contains_key(p)));
    }
    if check {
        return Ok(changes);
    }
    for path in changes.added.iter().chain(&changes.changed) {
        let file = wanted[path];
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        std::fs::write(path, &file.content).map_err(io(path))?;
        use std::os::unix::fs::PermissionsExt;
        let mode = if file.executable { 0o755 } else { 0o644 };
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(io(path))?;
    }
    for path in &changes.stale {
        std::fs::remove_file(path).map_err(io(path))?;
    }
    Ok(changes)
}
