"""mcp_skills: the Skills extension of MCP (SEP-2640, io.modelcontextprotocol/skills) for mcp_min.

A server offers a folder of skills. Each skill is a folder named as the skill: its SKILL.md (YAML
front matter with at least name and description, then the instructions) and any files beside it.

    skills/pdf-processing/SKILL.md
    skills/pdf-processing/references/FORMS.md

    from mcp_min import Server
    import mcp_skills

    server = Server("pdf-tools")
    mcp_skills.add_skills(server, "skills")  # each folder of skills/ is a skill
    server.run()

What a client then sees: capabilities.extensions["io.modelcontextprotocol/skills"] is
{"directoryRead": true}, the "resources" capability is there too, and
  skills/list {cursor?} -> {"skills": [entry, ...], nextCursor?}, in pages of mcp_min.PAGE_SIZE;
  skills/get {uri} -> {"skill": entry}, uri the skill's SKILL.md; any other uri: -32602;
  entry = {"uri": "skill://pdf-processing/SKILL.md", "frontmatter": {as the file has it},
           "resources": [{"uri", "digest": "sha256:<64 hex>", "size": bytes} for each file of
                         the skill, SKILL.md first]};
  resources/list and resources/read: each file at skill://<name>/<path> (percent-encoded), a
    UTF-8 file as text, any other as a blob; SKILL.md as text/markdown, with the name and the
    description of its front matter; any other file named by its path in the skill;
  resources/directory/read {uri, cursor?} -> {"resources": [the direct children of a skill's
    folder (skill://<name>) or of a folder in it: files as resources/list has them, folders as
    {"uri", "name", "mimeType": "inode/directory"}], nextCursor?}; any other uri: -32602.
On 2026-07-28 these results carry ttlMs 0 and cacheScope "public": a file may change at any time.

A skill is checked when it is added; a malformed one raises ValueError, one line that names its
file (as skill-folder/path): SKILL.md must open with front matter, with a name and a description;
the name must follow the Agent Skills naming rules (1-64 lowercase letters, digits and hyphens, no
hyphen first, last or twice in a row) and be the folder's; each file must be a readable regular
file inside the folder once symlinks are resolved; at most MAX_FILES files and folders, the files
of MAX_BYTES in all.
Hidden files and folders (".git") are no part of a skill; symlinked folders are not followed.

Files are read when asked, never kept: skills/list and skills/get hash the files of the skills
they return, so a digest is that of the file as it is then (and SKILL.md's front matter is that
of the very bytes hashed). Which files a skill has is fixed when it is added.

The front matter is read as YAML reads it, for the part of YAML this file knows: one `key: value`
per line (blank lines and # comments aside), the value JSON ("text", {"author": "me"}, 2: YAML
reads JSON as JSON), 'single-quoted' text, or plain text. Anything else is refused (a list, an
indented block, a value over several lines), as is plain text that YAML would read otherwise
(1.0, true, null, a: b): quote it.

Needs mcp_min.py with its sections 7 (pagination) and 8 (resources).
Spec: https://modelcontextprotocol.io/seps/2640-skills-extension
"""
import collections, contextlib, hashlib, json, math, mimetypes, os, re, urllib.parse

import mcp_min

if not hasattr(mcp_min, "page") or not hasattr(mcp_min.Server, "resource"):
    raise ImportError("mcp_skills needs mcp_min.py down to its section 8 (resources), at least")
from mcp_min import INVALID_PARAMS, METHODS, MCPError, Method, call, page, string_field  # noqa

EXTENSION = "io.modelcontextprotocol/skills"
SCHEME = "skill://"
MAX_FILES = 512  # files in a skill, SKILL.md included (SEP-2640's limits)
MAX_BYTES = 16 * 1024 * 1024  # bytes in a skill, its files together
NAME = re.compile(r"(?!.*--)[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?")  # Agent Skills' naming rules
FRONT_MATTER = re.compile(r"\ufeff?---\r?\n(.*?)\r?\n---[ \t]*(\r?\n|$)", re.DOTALL)
# key, value: the value up to its last non-space (not (.*?) *, which takes time growing with
# the square of a run of spaces inside it: minutes for a line of a megabyte).
LINE = re.compile(r"([\w.][\w./-]*): +(.*[^ ]|) *")
# A plain value that YAML reads as something else than this text: it opens with an indicator, a
# digit, a sign or a dot (1.0, +1, .inf), is null, true or false, or holds ": " or " #".
NOT_PLAIN_TEXT = re.compile(r"(?i)[-?:,\[\]{}#&*!|>'\"%@`+.\d]|(~|null|true|false)$|.*(: | #|:$)")
# A skill as added: its name (its folder's), the real path of its folder, and its files (paths
# relative to the folder, "/" between folders, SKILL.md first).
Skill = collections.namedtuple("Skill", "name root files")


def add_skills(server, folder):
    """Add each folder of `folder` as a skill, hidden ones aside, in the order of their names:
    checked now (ValueError, naming the file), then served: its files as resources, the skill in
    skills/list and skills/get."""
    for name in sorted(os.listdir(folder)):
        root = os.path.realpath(os.path.join(folder, name))
        if name.startswith(".") or not os.path.isdir(root):
            continue
        skill = Skill(name, root, skill_files(root, name))
        frontmatter = entry(skill)["frontmatter"]
        server.resource(uri_of(name, "SKILL.md"), name, description=frontmatter["description"],
                        mime_type="text/markdown")(reader(skill, "SKILL.md"))
        for rel in skill.files[1:]:
            server.resource(uri_of(name, rel), rel, mime_type=mimetypes.guess_type(rel)[0])(
                reader(skill, rel))
        server.registries.setdefault(EXTENSION, {})[name] = skill


def uri_of(name, rel):
    return f"{SCHEME}{name}/{urllib.parse.quote(rel)}"


def skill_files(root, name):
    """The files of a skill's folder, SKILL.md first: at most MAX_FILES, its folders counted
    too, so that the walk ends early on a tree of folders, however deep (os.walk recurses: at
    1,000 deep it would raise RecursionError). Symlinked folders are not followed."""
    files = []
    for walked, (top, folders, names) in enumerate(os.walk(root)):  # walked: folders below root
        folders[:] = sorted(folder for folder in folders if not folder.startswith("."))
        below = "" if top == root else os.path.relpath(top, root).replace(os.sep, "/") + "/"
        files += [below + file for file in sorted(names) if not file.startswith(".")]
        if len(files) + walked > MAX_FILES:
            raise ValueError(f"{name}: more than {MAX_FILES} files and folders in the skill")
    return ["SKILL.md"] + [file for file in files if file != "SKILL.md"]


def read(skill, rel, limit=MAX_BYTES):
    """A file of the skill as it is now, if it is still a readable regular file inside the skill's
    folder and holds at most `limit` bytes: its text if it is UTF-8, else its bytes."""
    path = os.path.realpath(os.path.join(skill.root, rel))
    if not path.startswith(skill.root + os.sep) or not os.access(path, os.R_OK) \
            or not os.path.isfile(path):
        raise ValueError(f"{skill.name}/{rel}: no readable file inside the skill's folder")
    with open(path, "rb") as file:
        data = file.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{skill.name}/{rel}: over the {MAX_BYTES} bytes a skill may have")
    text = data.decode(errors="replace")
    return text if text.encode() == data else data


def reader(skill, rel):
    """What resources/read calls for a file of a skill."""
    def read_file():
        return read(skill, rel)
    return read_file


def entry(skill):
    """The skill's entry in skills/list and skills/get, from its files as they are now, read one
    at a time; a malformed skill raises ValueError, naming the file."""
    resources = []
    for rel in skill.files:
        content = read(skill, rel, MAX_BYTES - sum(found["size"] for found in resources))
        data = content.encode() if isinstance(content, str) else content
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        resources.append({"uri": uri_of(skill.name, rel), "digest": digest, "size": len(data)})
        if rel == "SKILL.md":  # the front matter of the very bytes hashed
            frontmatter = front_matter(content, f"{skill.name}/SKILL.md")
    if frontmatter["name"] != skill.name or not NAME.fullmatch(skill.name):
        raise ValueError(f"{skill.name}/SKILL.md: the name must be its folder's, in a-z, 0-9 and "
                         "single hyphens inside (64 at most)")
    # The skill's URI is its SKILL.md's, the first of its files.
    return {"uri": resources[0]["uri"], "frontmatter": frontmatter, "resources": resources}


def front_matter(text, label):
    """The front matter of a SKILL.md as YAML reads it, for the part of YAML this file knows."""
    found = isinstance(text, str) and FRONT_MATTER.match(text)
    if not found:
        raise ValueError(f"{label}: no front matter: UTF-8, from ---, name:, description:, ---")
    fields = {}
    for number, line in enumerate(found[1].splitlines(), 2):
        parts = LINE.fullmatch(line)
        if re.fullmatch(r"\s*(#.*)?", line):  # a blank line, or a comment
            continue
        if not parts or parts[1] in fields:
            raise ValueError(f"{label} line {number}: not a `key: value` line of a new key")
        fields[parts[1]] = scalar(parts[2], f"{label} line {number}")
    if not all(isinstance(fields.get(key), str) and fields[key] for key in ("name", "description")):
        raise ValueError(f"{label}: the front matter needs a name and a description, as text")
    return fields


def scalar(value, where):
    """A value of the front matter: JSON (YAML reads it as JSON: "text", {"key": "value"}, 2),
    'single-quoted' text ('' for a quote), or plain text that YAML reads as that text."""
    if re.fullmatch(r"'(?:[^']|'')*'", value):
        return value[1:-1].replace("''", "'")
    # No JSON, or none we can send (NaN; 1e400, past a float's range): text. Nested too deeply
    # for Python to read (RecursionError): no JSON either.
    with contextlib.suppress(ValueError, RecursionError):
        return json.loads(value, parse_constant=mcp_min.refuse_constant, parse_float=finite)
    if NOT_PLAIN_TEXT.match(value):
        raise ValueError(f"{where}: YAML reads {value[:40]!r} as no plain text: quote it")
    return value


def finite(text):  # a JSON number with a fraction or an exponent, as a float; inf is refused
    return float(text) if math.isfinite(float(text)) else mcp_min.refuse_constant(text)


# --- The methods (SEP-2640): skills/list, skills/get, resources/directory/read ---

async def list_skills(server, params, ctx):
    """skills/list: a page of skills, each entry made from its files as they are now."""
    listed = page(list(server.registries[EXTENSION].values()), params, "skills")
    return {**listed, "skills": await call(lambda: [entry(skill) for skill in listed["skills"]])}


async def get_skill(server, params, ctx):
    """skills/get: the entry of the skill whose SKILL.md the uri names."""
    uri = string_field(params, "uri")
    name = uri.removeprefix(SCHEME).removesuffix("/SKILL.md")
    if name not in server.registries[EXTENSION] or uri != uri_of(name, "SKILL.md"):
        raise MCPError(INVALID_PARAMS, f"Unknown skill: {uri[:200]}", {"uri": uri})
    return {"skill": await call(entry, server.registries[EXTENSION][name])}


async def read_directory(server, params, ctx):
    """resources/directory/read: the direct children of a skill's folder, or of a folder in it:
    files as resources/list has them, folders as inode/directory."""
    folder = string_field(params, "uri").rstrip("/") + "/"
    children = {}
    for file_uri, found in server.registries["resources"].items():
        child, _, below = file_uri.removeprefix(folder).partition("/")
        if folder.startswith(SCHEME) and file_uri.startswith(folder):
            children[folder + child] = found.definition if not below else {
                "uri": folder + child, "name": child, "mimeType": "inode/directory"}
    if not children:
        raise MCPError(INVALID_PARAMS, f"No skill's folder: {folder[:80]}", {"uri": params["uri"]})
    return page(list(children.values()), params, "resources")


# A skill's files may change at any time: a 2026-07-28 client may cache none of these (ttl 0).
METHODS["skills/list"] = Method(list_skills, EXTENSION, ttl_ms=0)
METHODS["skills/get"] = Method(get_skill, EXTENSION, ttl_ms=0)
METHODS["resources/directory/read"] = Method(read_directory, EXTENSION, ttl_ms=0)
mcp_min.CAPABILITY_FIELDS[EXTENSION] = {"directoryRead": True}
