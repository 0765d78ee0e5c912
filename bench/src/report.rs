//! Markdown output: the environment header every report starts with, a small table builder and
//! number formatting.

use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::clients::ClientKind;
use crate::pinning::Setup;

/// A markdown table; short rows are padded with empty cells.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Table {
        Table { header: header.iter().map(|cell| (*cell).to_owned()).collect(), rows: Vec::new() }
    }

    pub fn row(&mut self, mut cells: Vec<String>) {
        cells.resize(self.header.len(), String::new());
        self.rows.push(cells);
    }

    pub fn render(&self) -> String {
        let line = |cells: &[String]| format!("| {} |\n", cells.join(" | "));
        let mut out = line(&self.header);
        out.push_str(&line(&vec!["---".to_owned(); self.header.len()]));
        for row in &self.rows {
            out.push_str(&line(row));
        }
        out
    }
}

/// `123456.7` → `123,457`.
pub fn group_thousands(value: f64) -> String {
    let digits = format!("{:.0}", value.max(0.0));
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Bytes as MiB with one decimal.
pub fn mebibytes(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// The header: date, machine, toolchains, pinning and client versions.
pub fn environment(setup: &Setup) -> String {
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines().find_map(|line| {
                line.strip_prefix("model name").map(|rest| rest.trim_start_matches([' ', '\t', ':']).to_owned())
            })
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let kernel =
        std::fs::read_to_string("/proc/sys/kernel/osrelease").map_or_else(|_| "?".to_owned(), |v| v.trim().to_owned());
    let versions: Vec<String> =
        setup.clients.iter().map(|client| format!("{client} {}", client.version(&setup.repo_root))).collect();
    let mut out = format!(
        "# odek-bench\n\n- date: {} (UTC)\n- machine: {cores} cores, {cpu}, Linux {kernel}\n- toolchains: {}; {}; {}\n- pinning: {}\n- clients: {}\n",
        utc_date(),
        tool_version("rustc", &["--version"]),
        tool_version("node", &["--version"]).replace("v", "node "),
        python_version(setup),
        setup.describe_pinning(),
        versions.join(", ")
    );
    out.push_str(&format!("- transport: {}\n", describe_transport(setup)));
    out.push_str(&format!("- echo server: {}\n", setup.server.display()));
    out.push_str(&format!("- built from: {}\n", env!("ODEK_BENCH_BUILT_FROM")));
    out.push_str(&format!("- load average at start: {} (other work on the machine skews every row)\n", load_average()));
    out
}

fn describe_transport(setup: &Setup) -> String {
    match setup.transport {
        crate::clients::Transport::Stdio => "stdio (each client spawns the server)".to_owned(),
        crate::clients::Transport::Http => format!(
            "Streamable HTTP to 127.0.0.1 (each probe starts a fresh `{}` and hands the client its URL)",
            setup.server_argv().join(" ")
        ),
    }
}

/// The 1, 5 and 15 minute load averages from `/proc/loadavg`.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| text.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".to_owned())
}

fn tool_version(program: &str, args: &[&str]) -> String {
    Command::new(program).args(args).output().ok().filter(|output| output.status.success()).map_or_else(
        || format!("{program} unavailable"),
        |output| String::from_utf8_lossy(&output.stdout).trim().to_owned(),
    )
}

fn python_version(setup: &Setup) -> String {
    if !setup.clients.contains(&ClientKind::PythonSdk) {
        return "python not used".to_owned();
    }
    let venv_python = std::env::var_os("ODEK_BENCH_PY_VENV")
        .map_or_else(|| setup.repo_root.join(".ci/cache/bench-peers/py-venv"), std::path::PathBuf::from)
        .join("bin/python");
    let python = if venv_python.is_file() { venv_python.display().to_string() } else { "python3".to_owned() };
    tool_version(&python, &["--version"])
}

/// Today's date from the system clock, `YYYY-MM-DD`.
fn utc_date() -> String {
    let days = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs() / 86_400);
    let (year, month, day) = civil_from_days(i64::try_from(days).unwrap_or(0));
    format!("{year:04}-{month:02}-{day:02}")
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = u32::try_from(day_of_year - (153 * month_index + 2) / 5 + 1).unwrap_or(1);
    let month = u32::try_from(if month_index < 10 { month_index + 3 } else { month_index - 9 }).unwrap_or(1);
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(group_thousands(0.0), "0");
        assert_eq!(group_thousands(999.4), "999");
        assert_eq!(group_thousands(1000.0), "1,000");
        assert_eq!(group_thousands(112_345.6), "112,346");
        assert_eq!(group_thousands(1_073_741_824.0), "1,073,741,824");
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(20_513), (2026, 3, 1));
    }

    #[test]
    fn short_rows_are_padded() {
        let mut table = Table::new(&["a", "b"]);
        table.row(vec!["1".to_owned()]);
        assert_eq!(table.render(), "| a | b |\n| --- | --- |\n| 1 |  |\n");
    }
}
