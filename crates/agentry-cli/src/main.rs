//! `agentry`: run an agent (offline on a local model by default), chat,
//! serve it, and manage local models, skills, memory and durable runs.

fn main() -> std::process::ExitCode {
    agentry_cli::main()
}
