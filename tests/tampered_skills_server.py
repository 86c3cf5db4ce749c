"""A small mcp_min server that offers skills by hand (the skills extension's methods added to
mcp_min's METHODS table, no mcp_skills), for tests/test_client_tasks.py: one true skill, and
skills whose entries lie about their files, to see the client refuse them. Both eras; stdio.

    python tests/tampered_skills_server.py

skills/list gives two entries a page, so that a client must follow nextCursor.
"""
import hashlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import mcp_min  # noqa: E402
from mcp_min import INVALID_PARAMS, MCPError, Method, Server  # noqa: E402

server = Server("tampered-skills", "1.0.0")
LOGO = bytes(range(256))  # a binary file: sent as a blob


def skill_md(name, description):
    return f"---\nname: {name}\ndescription: \"{description}\"\n---\n\n# {name}\n\nDo it well.\n"


def entry(name, description, files, lie=None):
    """The skills/list entry of skill `name` with `files` {path: content}; lie: {path: field}
    whose listed digest or size is wrong, or "frontmatter": a description unlike the file's."""
    def listed(path, content):
        data = content.encode() if isinstance(content, str) else content
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        size = len(data)
        if (lie or {}).get(path) == "digest":
            digest = "sha256:" + hashlib.sha256(b"something else").hexdigest()
        if (lie or {}).get(path) == "size":
            size += 1
        return {"uri": f"skill://{name}/{path}", "digest": digest, "size": size}
    shown = "an honest skill" if lie == {"SKILL.md": "frontmatter"} else description
    return {"uri": f"skill://{name}/SKILL.md",
            "frontmatter": {"name": name, "description": shown},
            "resources": [listed(path, content) for path, content in files.items()]}


SKILLS = {}  # SKILL.md URI -> (entry, {file URI: content})
LIES = {"good-skill": None, "bad-digest": {"references/notes.md": "digest"},
        "bad-size": {"SKILL.md": "size"}, "bad-frontmatter": {"SKILL.md": "frontmatter"}}
for name, lie in LIES.items():
    files = {"SKILL.md": skill_md(name, "Does a thing, well"),
             "references/notes.md": "Notes for later.\n", "assets/logo.bin": LOGO}
    skill = entry(name, "Does a thing, well", files, lie)
    SKILLS[skill["uri"]] = (skill, {f"skill://{name}/{path}": c for path, c in files.items()})


async def list_skills(server, params, ctx):
    """skills/list, two a page: the cursor is the index of the page's first entry."""
    start = int(params.get("cursor") or 0)
    entries = [skill for skill, _ in SKILLS.values()]
    page = {"skills": entries[start:start + 2]}
    if start + 2 < len(entries):
        page["nextCursor"] = str(start + 2)
    return page


async def get_skill(server, params, ctx):
    if params.get("uri") not in SKILLS:
        raise MCPError(INVALID_PARAMS, f"Invalid params: no skill {params.get('uri')!r}")
    return {"skill": SKILLS[params["uri"]][0]}


mcp_min.METHODS["skills/list"] = Method(list_skills)
mcp_min.METHODS["skills/get"] = Method(get_skill)


@server.resource("skill://{name}/{folder}/{file}")
def skill_file(name: str, folder: str, file: str):
    """A supporting file of a skill."""
    return read(f"skill://{name}/{folder}/{file}")


@server.resource("skill://{name}/{file}")
def skill_top_file(name: str, file: str):
    """A skill's SKILL.md."""
    return read(f"skill://{name}/{file}")


def read(uri):
    for _, files in SKILLS.values():
        if uri in files:
            return files[uri]
    return None


if __name__ == "__main__":
    server.run()
