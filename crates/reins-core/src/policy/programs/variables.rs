//! Environment variables that make a program load or run code of the setter's choosing: a prefix
//! such as `LD_PRELOAD=x.so ls` turns a harmless program into anything.

/// Environment variables that make a program load or run other code.
pub fn exec_capable_variable(name: &str) -> Option<&'static str> {
    let upper = name.to_ascii_uppercase();
    let why = match upper.as_str() {
        "LD_PRELOAD" | "LD_AUDIT" => "makes every program load a library of its choosing",
        "LD_LIBRARY_PATH" => "changes which libraries programs load",
        "PATH" => "changes which program a name runs",
        "BASH_ENV" | "ENV" => "names a script every shell runs first",
        "PROMPT_COMMAND" | "PS4" | "PS1" => "holds shell code that runs",
        "IFS" => "changes how the shell splits words",
        "SHELLOPTS" | "BASHOPTS" => "changes how the shell behaves",
        "GIT_SSH_COMMAND"
        | "GIT_SSH"
        | "GIT_EXTERNAL_DIFF"
        | "GIT_PAGER"
        | "GIT_EDITOR"
        | "GIT_SEQUENCE_EDITOR"
        | "GIT_ASKPASS"
        | "SSH_ASKPASS"
        | "GIT_PROXY_COMMAND"
        | "GIT_EXEC_PATH"
        | "GIT_TEMPLATE_DIR" => "names a program git runs",
        "GIT_CONFIG"
        | "GIT_CONFIG_GLOBAL"
        | "GIT_CONFIG_SYSTEM"
        | "GIT_CONFIG_PARAMETERS"
        | "GIT_CONFIG_COUNT"
        | "GIT_DIR"
        | "GIT_WORK_TREE" => "changes git's config or repository",
        "PAGER" | "EDITOR" | "VISUAL" | "MANPAGER" | "BROWSER" | "LESSOPEN" | "LESSCLOSE" => {
            "names a program that runs"
        }
        "PYTHONPATH" | "PYTHONSTARTUP" | "PYTHONHOME" | "PYTHONINSPECT" => {
            "makes Python load code of its choosing"
        }
        "NODE_OPTIONS" | "NODE_PATH" => "makes Node load code of its choosing",
        "PERL5OPT" | "PERL5LIB" | "PERLLIB" => "makes Perl load code of its choosing",
        "RUBYOPT" | "RUBYLIB" => "makes Ruby load code of its choosing",
        "RUSTC_WRAPPER"
        | "RUSTC"
        | "CARGO_BUILD_RUSTC_WRAPPER"
        | "CC"
        | "CXX"
        | "LD"
        | "AR"
        | "MAKEFLAGS"
        | "CARGO_TARGET_DIR" => "names a program the build runs",
        "JAVA_TOOL_OPTIONS" | "_JAVA_OPTIONS" | "JDK_JAVA_OPTIONS" => "makes Java load agents",
        "HOME" | "XDG_CONFIG_HOME" => "changes where programs read their config",
        "CDPATH" => "changes where `cd` goes, so the paths after it are not the ones they read as",
        _ if upper.starts_with("LD_") || upper.starts_with("DYLD_") => {
            "changes how programs are loaded"
        }
        _ if upper.starts_with("BASH_FUNC_") => "defines a shell function",
        _ => return None,
    };
    Some(why)
}
