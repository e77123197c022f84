//! `agentry tools import-openapi SPEC`: what an agent gets from an OpenAPI
//! specification: one tool per operation (name, method and path, first line
//! of its description), the network grant its calls need, and the
//! operations left out with the reason.

use std::process::ExitCode;

use agentry_openapi::OpenApiToolset;

/// `agentry tools …`.
#[derive(clap::Subcommand)]
pub enum ToolsCommand {
    /// Read an OpenAPI 3.0/3.1 specification (a file, JSON or YAML) into tools.
    ImportOpenapi {
        /// The specification's file.
        spec: String,
        /// Call the tools `NAME.operation` (default: from the title).
        #[arg(long)]
        name: Option<String>,
        /// Print the tools as JSON (name, description, input and output schemas).
        #[arg(long)]
        json: bool,
    },
}

/// Run a `tools` command.
pub fn run(command: ToolsCommand) -> Result<ExitCode, String> {
    match command {
        ToolsCommand::ImportOpenapi { spec, name, json } => {
            let mut toolset = OpenApiToolset::from_spec(&spec).map_err(|e| e.to_string())?;
            if let Some(name) = name {
                toolset = toolset.with_name(name);
            }
            let tools = toolset.tools();
            if json {
                let listed = serde_json::to_string_pretty(&tools).map_err(|e| e.to_string())?;
                println!("{listed}");
            } else {
                for (tool, operation) in tools.iter().zip(toolset.operations()) {
                    let first = operation.description.lines().next().unwrap_or("");
                    println!(
                        "{} ({} {}): {first}",
                        tool.name, operation.method, operation.path
                    );
                }
                match toolset.host_grant() {
                    grant if grant.is_empty() => println!(
                        "{} tools; the specification names no server, so calls need a base URL",
                        tools.len()
                    ),
                    grant => println!("{} tools; calls need the grant {grant}", tools.len()),
                }
            }
            for skipped in toolset.skipped() {
                eprintln!("left out: {}: {}", skipped.operation, skipped.reason);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
