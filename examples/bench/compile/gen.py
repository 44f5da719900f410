#!/usr/bin/env python3
"""Writes a server crate with N tools, for timing how a crate of `#[tool]`s compiles.

    gen.py --tools 100 --flavor ours --out /tmp/compile/ours-100
    gen.py --tools 100 --flavor rmcp --out /tmp/compile/rmcp-100

The tools cycle through four parameter shapes (none; two primitives; a struct of five
fields with an optional one; an enum and a list), and every third asks the user for a
typed form mid-call. `ours` is written for mcp-mrtr (`#[tool]` functions, `ask!`), `rmcp`
for rmcp 3.11 (`#[tool_router]` methods taking `Parameters<T>`, asking through
`peer.elicit::<T>()`), the same tools in each. The crate stands outside the workspace;
`ours` depends on this checkout by path. One handler's body carries the marker
`EDIT-ME`, for the incremental check.
"""
import argparse
import os
import textwrap

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def shape(i):
    return i % 4


def asks(i):
    return i % 3 == 2


def item(i, derive):
    """The struct tools of shape 2 take."""
    return [
        f"/// What tool {i} works on.",
        derive,
        f"pub struct Item{i} {{",
        "    /// Its name.", "    pub name: String,",
        "    /// How many.", "    pub count: u32,",
        "    /// A weight.", "    pub weight: f64,",
        "    /// Whether it is urgent.", "    pub urgent: bool,",
        "    /// A note.", "    pub note: Option<String>,",
        "}", "",
    ]


def order(i, derive):
    """The enum tools of shape 3 take."""
    return [f"/// How tool {i} sorts.", derive, "#[serde(rename_all = \"lowercase\")]", f"pub enum Order{i} {{ Asc, Desc }}", ""]


def answer(i, derive):
    """The form a tool that asks asks for."""
    return [
        f"/// What tool {i} asks for.",
        derive,
        f"pub struct Answer{i} {{",
        "    /// The choice.", "    pub choice: String,",
        "    /// Sure?", "    pub sure: bool,",
        "}",
    ]


def manifest(dependencies):
    """A crate of its own, outside any workspace."""
    return textwrap.dedent("""\
        [package]
        name = "compile-bench"
        version = "0.1.0"
        edition = "2021"
        publish = false

        [workspace]

        [dependencies]
        """) + textwrap.dedent(dependencies)


def result(i, s):
    """The expression a tool of shape `s` returns, the same in both flavors."""
    return {
        0: f'format!("tool {i}")',
        1: f'format!("tool {i}: {{}}", word.repeat(times as usize))',
        2: f'format!("tool {i}: {{}} x{{}} {{}} {{}} {{:?}}", item.name, item.count, item.weight, item.urgent, item.note)',
        3: f'format!("tool {i}: {{}} {{}}", matches!(order, Order{i}::Asc), values.len())',
    }[s]


def ours(n):
    out = ["use mcp_mrtr::prelude::*;", ""]
    for i in range(n):
        s = shape(i)
        derive = "#[derive(Deserialize, JsonSchema)]"
        if s == 2:
            out += item(i, derive)
        if s == 3:
            out += order(i, derive)
        if asks(i):
            out += answer(i, derive) + [""]
        params = {
            0: "",
            1: "\n    /// A word.\n    word: String,\n    /// A number.\n    times: u32,\n",
            2: f"\n    /// The item.\n    item: Item{i},\n",
            3: f"\n    /// Sort order.\n    order: Order{i},\n    /// Values.\n    values: Vec<i64>,\n",
        }[s]
        body = result(i, s)
        marker = "    // EDIT-ME\n" if i == 0 else ""
        ask = f'    let answer: Answer{i} = ask!(elicit "Tool {i} needs a choice")?;\n' if asks(i) else ""
        tail = f'    Ok(format!("{{}} {{}} {{}}", {body}, answer.choice, answer.sure))\n' if asks(i) else f"    Ok({body})\n"
        out.append(f"/// Tool number {i}.")
        out.append("#[tool]")
        out.append(f"pub async fn tool_{i}({params}) -> Result<String, ToolError> {{")
        out.append(marker + ask + tail + "}")
        out.append("")
    names = ", ".join(f"tool_{i}" for i in range(n))
    out += [
        "#[tokio::main]",
        "async fn main() -> std::io::Result<()> {",
        f'    Server::new("compile-bench", "0.1.0").tools(tools![{names}]).serve(Stdio::new()).await',
        "}",
    ]
    dependencies = f"""\
        mcp-mrtr = {{ path = "{ROOT}/mcp-mrtr" }}
        serde = {{ version = "1", features = ["derive"] }}
        schemars = "1"
        tokio = {{ version = "1", features = ["macros", "rt-multi-thread"] }}
        """
    return manifest(dependencies), "\n".join(out) + "\n"


def rmcp(n):
    out = [
        "use rmcp::handler::server::wrapper::Parameters;",
        "use rmcp::model::ErrorData;",
        "use rmcp::service::RequestContext;",
        "use rmcp::{schemars, tool, tool_router, RoleServer, ServiceExt};",
        "use serde::Deserialize;",
        "",
    ]
    derive = "#[derive(Deserialize, schemars::JsonSchema)]"
    for i in range(n):
        s = shape(i)
        # rmcp takes a tool's arguments as one struct: the same fields as ours.
        fields = {
            1: ["    /// A word.", "    pub word: String,", "    /// A number.", "    pub times: u32,"],
            2: ["    /// The item.", f"    pub item: Item{i},"],
            3: ["    /// Sort order.", f"    pub order: Order{i},", "    /// Values.", "    pub values: Vec<i64>,"],
        }.get(s)
        if s == 2:
            out += item(i, derive)
        if s == 3:
            out += order(i, derive)
        if fields:
            out += [f"/// The arguments of tool {i}.", derive, f"pub struct Args{i} {{", *fields, "}", ""]
        if asks(i):
            out += answer(i, derive) + [f"rmcp::elicit_safe!(Answer{i});", ""]
    out += ["#[derive(Clone)]", "pub struct Bench;", "", "#[tool_router(server_handler)]", "impl Bench {"]
    for i in range(n):
        s = shape(i)
        params = {0: "", 1: f", Parameters(Args{i} {{ word, times }}): Parameters<Args{i}>",
                  2: f", Parameters(Args{i} {{ item }}): Parameters<Args{i}>",
                  3: f", Parameters(Args{i} {{ order, values }}): Parameters<Args{i}>"}[s]
        if asks(i):
            params += ", context: RequestContext<RoleServer>"
        body = result(i, s)
        marker = "        // EDIT-ME\n" if i == 0 else ""
        out.append(f"    /// Tool number {i}.")
        out.append(f'    #[tool(description = "Tool number {i}.")]')
        out.append(f"    async fn tool_{i}(&self{params}) -> Result<String, ErrorData> {{")
        if asks(i):
            out.append(marker + f"        let answer = context.peer.elicit::<Answer{i}>(\"Tool {i} needs a choice\").await")
            out.append('            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?')
            out.append('            .ok_or_else(|| ErrorData::invalid_params("declined", None))?;')
            out.append(f'        Ok(format!("{{}} {{}} {{}}", {body}, answer.choice, answer.sure))')
        else:
            out.append(marker + f"        Ok({body})")
        out.append("    }")
        out.append("")
    out += [
        "}",
        "",
        "#[tokio::main]",
        "async fn main() -> Result<(), Box<dyn std::error::Error>> {",
        "    Bench.serve(rmcp::transport::stdio()).await?.waiting().await?;",
        "    Ok(())",
        "}",
    ]
    dependencies = """\
        rmcp = { version = "=3.11.0", features = ["server", "macros", "elicitation", "transport-io"] }
        serde = { version = "1", features = ["derive"] }
        tokio = { version = "1", features = ["macros", "rt-multi-thread"] }
        """
    return manifest(dependencies), "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, required=True)
    parser.add_argument("--flavor", choices=["ours", "rmcp"], required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    manifest, main_rs = (ours if args.flavor == "ours" else rmcp)(args.tools)
    os.makedirs(os.path.join(args.out, "src"), exist_ok=True)
    with open(os.path.join(args.out, "Cargo.toml"), "w") as f:
        f.write(manifest)
    with open(os.path.join(args.out, "src", "main.rs"), "w") as f:
        f.write(main_rs)


if __name__ == "__main__":
    main()
