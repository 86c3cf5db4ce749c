"""mcp_skills.py, the Skills extension (SEP-2640), on the wire: raw lines into a real stdio server,
exact lines out. skills/list in pages, skills/get, each file as a skill:// resource with its
sha256 digest and size, resources/directory/read, the cache hints of 2026-07-28, an unknown skill
(-32602); a file changed on disk after the server started; each malformed skill refused when it
is added, in one line that names its file; and a cut of mcp_min.py without resources, which
mcp_skills refuses to load, saying what it needs. The suite's own scenarios run in
tests/test_conformance.py.
"""
import base64
import hashlib
import json
import os
import queue
import subprocess
import sys
import threading

import pytest

from conftest import ROOT

MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}}
SERVER_INFO = {"name": "skills-test", "version": "1"}
# The server: every folder of argv[1] as a skill, lists in pages of argv[2].
SCRIPT = """
import sys
sys.path.insert(0, sys.argv[3])
import mcp_min, mcp_skills
mcp_min.PAGE_SIZE = int(sys.argv[2])
server = mcp_min.Server("skills-test", "1")
mcp_skills.add_skills(server, sys.argv[1])
server.run()
"""
ALPHA = ("---\nname: alpha\ndescription: 'Alpha: the first skill'\nlicense: MIT\n"
         "metadata: {\"author\": \"me\", \"version\": \"1.0\"}\n---\n\n# Alpha\n\nRead "
         "references/guide.md.\n")
PNG_BYTES = b"\x89PNG\r\n\x1a\n\x00\xff"  # no UTF-8: a blob


def skill_md(name, description="A skill."):
    return f"---\nname: {name}\ndescription: {description}\n---\n\nDo it well.\n"


def make_skills(folder, skills):
    """skills: {folder name: {relative path: str or bytes}}."""
    for name, files in skills.items():
        for rel, content in files.items():
            path = folder / name / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")
    return folder


@pytest.fixture
def skills(tmp_path):
    return make_skills(tmp_path / "skills", {
        "alpha": {"SKILL.md": ALPHA, "references/guide.md": "# Guide\n\nStep one.\n",
                  "logo.png": PNG_BYTES, ".hidden": "not part of the skill",
                  ".git/config": "nor this"},
        "beta": {"SKILL.md": skill_md("beta")},
        "gamma": {"SKILL.md": skill_md("gamma", '"Quoted: \\"fine\\""')}})


class Wire:
    """A stdio server: one raw line in, the next line out (a reader thread, a timeout)."""

    def __init__(self, folder, page_size=2):
        script = folder.parent / "skills_server.py"
        script.write_text(SCRIPT, encoding="utf-8")
        self.process = subprocess.Popen(
            [sys.executable, str(script), str(folder), str(page_size), str(ROOT)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines = queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(line) for line in self.process.stdout],
                         daemon=True).start()

    def ask(self, request_id, method, params=None, modern=False):
        """The raw answer line (without its newline) to one request."""
        params = {**(params or {}), **({"_meta": META} if modern else {})}
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()
        return self.lines.get(timeout=60).rstrip(b"\n").decode()

    def close(self):
        self.process.stdin.close()
        assert self.process.wait(60) == 0, self.process.stderr.read().decode()


@pytest.fixture
def wire(skills):
    server = Wire(skills)
    yield server
    server.close()


def line(request_id, result=None, error=None):
    """The exact line mcp_min writes: compact JSON, keys in the order given."""
    body = {"result": result} if error is None else {"error": error}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, **body}, separators=(",", ":"))


def digest(data):
    data = data.encode() if isinstance(data, str) else data
    return {"digest": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data)}


def entry(name, files, frontmatter):
    """A skill's entry: files {relative path: content}, SKILL.md first."""
    return {"uri": f"skill://{name}/SKILL.md", "frontmatter": frontmatter,
            "resources": [{"uri": f"skill://{name}/{rel}", **digest(content)}
                          for rel, content in files.items()]}


ALPHA_FRONTMATTER = {"name": "alpha", "description": "Alpha: the first skill", "license": "MIT",
                     "metadata": {"author": "me", "version": "1.0"}}
ALPHA_ENTRY = entry("alpha", {"SKILL.md": ALPHA, "logo.png": PNG_BYTES,
                              "references/guide.md": "# Guide\n\nStep one.\n"}, ALPHA_FRONTMATTER)
BETA_ENTRY = entry("beta", {"SKILL.md": skill_md("beta")},
                   {"name": "beta", "description": "A skill."})
GAMMA_ENTRY = entry("gamma", {"SKILL.md": skill_md("gamma", '"Quoted: \\"fine\\""')},
                    {"name": "gamma", "description": 'Quoted: "fine"'})
ALPHA_MD = {"name": "alpha", "description": "Alpha: the first skill",
            "uri": "skill://alpha/SKILL.md", "mimeType": "text/markdown"}
LOGO = {"name": "logo.png", "uri": "skill://alpha/logo.png", "mimeType": "image/png"}
GUIDE = {"name": "references/guide.md", "uri": "skill://alpha/references/guide.md",
         "mimeType": "text/markdown"}


def test_skills_list_comes_in_pages_and_skills_get_gives_one_entry(wire):
    assert wire.ask(1, "skills/list") == line(1, {"skills": [ALPHA_ENTRY, BETA_ENTRY],
                                                  "nextCursor": "2"})
    assert wire.ask(2, "skills/list", {"cursor": "2"}) == line(2, {"skills": [GAMMA_ENTRY]})
    assert wire.ask(3, "skills/get", {"uri": "skill://alpha/SKILL.md"}) == line(
        3, {"skill": ALPHA_ENTRY})
    assert wire.ask(4, "skills/list", {"cursor": "7"}) == line(4, error={
        "code": -32602, "message": 'Invalid params: unknown cursor "7"'})


@pytest.mark.parametrize("uri", ["skill://delta/SKILL.md", "skill://alpha", "skill://alpha/",
                                 "skill://alpha/logo.png", "skill://alpha/../alpha/SKILL.md",
                                 "file:///alpha/SKILL.md"])
def test_skills_get_of_anything_but_a_served_skill_is_invalid_params(wire, uri):
    assert wire.ask(1, "skills/get", {"uri": uri}) == line(1, error={
        "code": -32602, "message": f"Unknown skill: {uri}", "data": {"uri": uri}})
    assert wire.ask(2, "skills/get", {}) == line(2, error={
        "code": -32602, "message": 'Invalid params: "uri" must be a string'})


def test_each_file_is_a_resource_skill_md_as_markdown_named_by_its_front_matter(wire):
    assert wire.ask(1, "resources/list") == line(1, {"resources": [ALPHA_MD, LOGO], "nextCursor":
                                                     "2"})
    assert wire.ask(2, "resources/read", {"uri": "skill://alpha/SKILL.md"}) == line(2, {
        "contents": [{"uri": "skill://alpha/SKILL.md", "mimeType": "text/markdown",
                      "text": ALPHA}]})
    assert wire.ask(3, "resources/read", {"uri": "skill://alpha/logo.png"}) == line(3, {
        "contents": [{"uri": "skill://alpha/logo.png", "mimeType": "image/png",
                      "blob": base64.b64encode(PNG_BYTES).decode()}]})
    assert wire.ask(4, "resources/read", {"uri": "skill://alpha/.hidden"}) == line(4, error={
        "code": -32602, "message": "Resource not found: skill://alpha/.hidden; resources/list "
        "and resources/templates/list say what exists", "data": {"uri": "skill://alpha/.hidden"}})


def test_directory_read_lists_the_direct_children_folders_as_inode_directory(wire):
    folder = {"uri": "skill://alpha/references", "name": "references",
              "mimeType": "inode/directory"}
    assert wire.ask(1, "resources/directory/read", {"uri": "skill://alpha"}) == line(
        1, {"resources": [ALPHA_MD, LOGO], "nextCursor": "2"})
    assert wire.ask(2, "resources/directory/read", {"uri": "skill://alpha", "cursor": "2"}) \
        == line(2, {"resources": [folder]})
    assert wire.ask(3, "resources/directory/read", {"uri": "skill://alpha/references/"}) == line(
        3, {"resources": [GUIDE]})


@pytest.mark.parametrize("uri", ["skill://alpha/SKILL.md", "skill://alpha/references/guide.md",
                                 "skill://delta", "skill://", "skill://alp", "test://alpha"])
def test_directory_read_of_no_skill_folder_is_invalid_params(wire, uri):
    shown = uri.rstrip("/") + "/"
    assert wire.ask(1, "resources/directory/read", {"uri": uri}) == line(1, error={
        "code": -32602, "message": f"No skill's folder: {shown}", "data": {"uri": uri}})


def test_2026_07_28_results_carry_cache_hints_and_the_extension_is_declared(wire):
    meta = {"io.modelcontextprotocol/serverInfo": SERVER_INFO}
    hints = {"resultType": "complete", "_meta": meta, "ttlMs": 0, "cacheScope": "public"}
    assert wire.ask(1, "skills/get", {"uri": "skill://beta/SKILL.md"}, modern=True) == line(
        1, {"skill": BETA_ENTRY, **hints})
    assert wire.ask(2, "skills/list", {"cursor": "2"}, modern=True) == line(
        2, {"skills": [GAMMA_ENTRY], **hints})
    assert wire.ask(3, "resources/directory/read", {"uri": "skill://beta"}, modern=True) == line(
        3, {"resources": [{"name": "beta", "description": "A skill.",
                           "uri": "skill://beta/SKILL.md", "mimeType": "text/markdown"}],
            **hints})
    discovered = json.loads(wire.ask(4, "server/discover", modern=True))["result"]
    assert discovered["capabilities"]["extensions"] == {
        "io.modelcontextprotocol/skills": {"directoryRead": True}}
    assert "resources" in discovered["capabilities"]


def test_a_file_changed_after_the_start_is_served_with_a_digest_of_what_is_served(skills):
    wire = Wire(skills)
    try:
        (skills / "alpha" / "references" / "guide.md").write_text("# Guide\n\nStep two, now.\n")
        got = json.loads(wire.ask(1, "skills/get", {"uri": "skill://alpha/SKILL.md"}))
        listed = {found["uri"]: found for found in got["result"]["skill"]["resources"]}
        read = json.loads(wire.ask(2, "resources/read",
                                   {"uri": "skill://alpha/references/guide.md"}))
        text = read["result"]["contents"][0]["text"]
        assert text == "# Guide\n\nStep two, now.\n"
        assert listed["skill://alpha/references/guide.md"] == {
            "uri": "skill://alpha/references/guide.md", **digest(text)}
        (skills / "alpha" / "logo.png").unlink()  # gone: an error that names no path of ours
        error = json.loads(wire.ask(3, "skills/get", {"uri": "skill://alpha/SKILL.md"}))["error"]
        assert error["code"] == -32603 and str(skills) not in error["message"], error
        assert "alpha/logo.png: no readable file inside the skill's folder" in error["message"]
    finally:
        wire.close()


def test_a_long_front_matter_line_is_read_at_once_and_a_hostile_change_is_refused(skills):
    # A value with a long run of spaces inside: its line is read in one pass (it once took time
    # growing with the square of its length: minutes for this one, the server unstarted).
    spaced = "Spaced" + " " * 1_000_000 + "out."
    (skills / "beta" / "SKILL.md").write_text(skill_md("beta", spaced), encoding="utf-8")
    wire = Wire(skills)
    try:
        got = json.loads(wire.ask(1, "skills/get", {"uri": "skill://beta/SKILL.md"}))
        assert got["result"]["skill"]["frontmatter"] == {"name": "beta", "description": spaced}
        # Changed after the start to JSON nested too deeply to read: an error naming the line.
        (skills / "beta" / "SKILL.md").write_text(skill_md("beta", "[" * 100_000))
        error = json.loads(wire.ask(2, "skills/get", {"uri": "skill://beta/SKILL.md"}))["error"]
        assert error["code"] == -32603 and "\n" not in error["message"], error
        assert error["message"].startswith("Internal error: ValueError: beta/SKILL.md line 3: "
                                           "YAML reads '[[[["), error
    finally:
        try:
            wire.close()
        finally:
            wire.process.kill()  # one that hangs (this one did, before) goes with the test


# --- A malformed skill is refused when it is added: one line that names its file ---

def refusal(folder):
    """What add_skills raises for the skills in folder, as the server author sees it."""
    sys.path.insert(0, str(ROOT))
    import mcp_min
    import mcp_skills
    with pytest.raises(ValueError) as refused:
        mcp_skills.add_skills(mcp_min.Server("refusing"), folder)
    assert "\n" not in str(refused.value) and str(folder) not in str(refused.value)
    return str(refused.value)


@pytest.mark.parametrize("files, expected", [
    ({"SKILL.md": "# No front matter\n"}, "bad/SKILL.md: no front matter"),
    ({"SKILL.md": "---\nname: bad\n---\n"}, "bad/SKILL.md: the front matter needs a name and a "
                                            "description, as text"),
    ({"SKILL.md": skill_md("other")}, "bad/SKILL.md: the name must be its folder's"),
    ({"SKILL.md": "---\nname: bad\ndescription: x\n  - indented: list\n---\n"},
     "bad/SKILL.md line 4: not a `key: value` line"),
    ({"SKILL.md": "---\nname: bad\ndescription: x\nname: bad\n---\n"},
     "bad/SKILL.md line 4: not a `key: value` line of a new key"),
    ({"SKILL.md": "---\nname: bad\ndescription: 1.0\n---\n"},
     "bad/SKILL.md: the front matter needs a name and a description, as text"),
    ({"SKILL.md": "---\nname: bad\ndescription: .5\n---\n"},
     "bad/SKILL.md line 3: YAML reads '.5' as no plain text: quote it"),
    ({"SKILL.md": "---\nname: bad\ndescription: a: b\n---\n"},
     "bad/SKILL.md line 3: YAML reads 'a: b' as no plain text"),
    ({"SKILL.md": "---\nname: bad\ndescription: True\n---\n"},
     "bad/SKILL.md line 3: YAML reads 'True' as no plain text"),
    ({"SKILL.md": b"---\nname: bad\ndescription: caf\xe9\n---\n"}, "bad/SKILL.md: no front matter"),
    # JSON that Python reads but cannot serve: nested too deeply to read, or a float past range
    # (inf, which no JSON answer can carry): refused, as YAML reads neither as text.
    ({"SKILL.md": "---\nname: bad\ndescription: x\nx: " + "[" * 100_000 + "\n---\n"},
     "bad/SKILL.md line 4: YAML reads '[[[["),
    ({"SKILL.md": "---\nname: bad\ndescription: x\nsize: {\"max\": 1e400}\n---\n"},
     "bad/SKILL.md line 4: YAML reads '{\"max\": 1e400}' as no plain text: quote it"),
    ({"notes.md": "no SKILL.md"}, "bad/SKILL.md: no readable file inside the skill's folder"),
    ({"SKILL.md": skill_md("bad"), **{f"f{n}.txt": "x" for n in range(512)}},
     "bad: more than 512 files and folders in the skill"),
])
def test_a_malformed_skill_is_refused_naming_its_file(tmp_path, files, expected):
    folder = make_skills(tmp_path / "skills", {"bad": files})
    assert refusal(folder).startswith(expected)


@pytest.mark.parametrize("name", ["Bad", "bad_name", "-bad", "bad-", "bad--name", "b" * 65])
def test_a_name_that_breaks_the_naming_rules_is_refused(tmp_path, name):
    folder = make_skills(tmp_path / "skills", {name: {"SKILL.md": skill_md(f'"{name}"')}})
    assert refusal(folder) == (f"{name}/SKILL.md: the name must be its folder's, in a-z, 0-9 and "
                               "single hyphens inside (64 at most)")


def test_a_file_that_leads_out_of_its_skill_is_refused(tmp_path):
    folder = make_skills(tmp_path / "skills", {"bad": {"SKILL.md": skill_md("bad")}})
    (tmp_path / "secret.txt").write_text("outside")
    os.symlink("../../secret.txt", folder / "bad" / "escape.txt")
    assert refusal(folder) == "bad/escape.txt: no readable file inside the skill's folder"
    (folder / "bad" / "escape.txt").unlink()
    os.symlink(tmp_path / "secret.txt", folder / "bad" / "absolute.txt")
    assert refusal(folder) == "bad/absolute.txt: no readable file inside the skill's folder"
    (folder / "bad" / "absolute.txt").unlink()
    os.mkfifo(folder / "bad" / "pipe")  # reading it would wait for ever
    assert refusal(folder) == "bad/pipe: no readable file inside the skill's folder"


def test_a_skill_of_folders_nested_deeper_than_its_files_may_be_is_refused(tmp_path):
    # os.walk (Python 3.11) goes down by recursion: 1,000 folders deep, it raised RecursionError.
    folder = make_skills(tmp_path / "skills", {"bad": {"SKILL.md": skill_md("bad")}})
    deep = folder / "bad"
    for _ in range(1100):  # one at a time: os.makedirs recurses too
        deep = deep / "a"
        deep.mkdir()
    try:
        assert refusal(folder) == "bad: more than 512 files and folders in the skill"
    finally:  # bottom up: shutil.rmtree recurses too, and pytest cleans up tmp_path with it
        while deep != folder / "bad":
            deep.rmdir()
            deep = deep.parent


def test_a_skill_over_16_mib_is_refused(tmp_path):
    big = b"x" * (8 * 1024 * 1024 + 1)
    folder = make_skills(tmp_path / "skills", {"bad": {"SKILL.md": skill_md("bad"),
                                                       "a.bin": big, "b.bin": big}})
    assert refusal(folder) == "bad/b.bin: over the 16777216 bytes a skill may have"


def test_a_cut_of_mcp_min_without_resources_refuses_mcp_skills_saying_what_it_needs(tmp_path):
    lines = (ROOT / "mcp_min.py").read_text(encoding="utf-8").splitlines(keepends=True)
    cut = next(n for n, text in enumerate(lines) if text.startswith("# === 8. Resources"))
    (tmp_path / "mcp_min.py").write_text("".join(lines[:cut]), encoding="utf-8")
    (tmp_path / "mcp_skills.py").write_text((ROOT / "mcp_skills.py").read_text())
    done = subprocess.run([sys.executable, "-c", "import mcp_skills"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == ("ImportError: mcp_skills needs mcp_min.py down to its "
                                            "section 8 (resources), at least")


def test_a_server_without_skills_declares_no_extension(tmp_path):
    (tmp_path / "none").mkdir()
    wire = Wire(tmp_path / "none")
    try:
        discovered = json.loads(wire.ask(1, "server/discover", modern=True))["result"]
        assert discovered["capabilities"] == {}
        assert wire.ask(2, "skills/list") == line(2, error={
            "code": -32601, "message": "Method not found: skills/list"})
    finally:
        wire.close()
