"""make_tree.py - write a documentation tree shaped like a real docs site, for `make bench`.

    python measure/make_tree.py OUT [--files 10000] [--seed 0]

Files are spread as a versioned reference is: OUT/<version>/<module>/<page>.md, five product
versions of the same modules and pages (so the same page exists once per version, and only its
folder tells them apart), each file with YAML front matter (title, ms.date, external help
file) and a few sections of generated prose, about 2 KB a file. The same arguments always
write the same tree. Nothing here is a real document: it measures what scales with the
number of files (scanning, reading front matter, splitting, listing), not retrieval quality.
"""

import argparse
import os
import random

VERSIONS = ["7.2", "7.3", "7.4", "7.5", "7.6"]
WORDS = ("kettle session module pipeline object property value string folder file path "
         "command parameter output input error warning stream format table list filter "
         "sort group measure select where foreach job remote host network service process "
         "event log registry certificate credential variable scope alias function script "
         "profile policy culture encoding version update help about example note").split()
SECTIONS = ["Synopsis", "Syntax", "Description", "Examples", "Parameters", "Inputs",
            "Outputs", "Notes"]


def sentence(rng):
    words = rng.choices(WORDS, k=rng.randint(8, 18))
    return " ".join(words).capitalize() + "."


def page(rng, version, module, name):
    lines = ["---", f"external help file: {module}-help.xml", f"Module Name: {module}",
             f"ms.date: {rng.randint(1, 12):02d}/{rng.randint(1, 28):02d}/2024",
             f"title: {name}", "---", "", f"# {name}", ""]
    for section in rng.sample(SECTIONS, rng.randint(3, 5)):
        lines += [f"## {section}", "", " ".join(sentence(rng) for _ in range(rng.randint(2, 6))),
                  "", f"This applies to version {version}.", ""]
    return "\n".join(lines)


def make_tree(out, files=10_000, seed=0):
    """Write `files` markdown files under out; returns their relative names."""
    rng = random.Random(seed)
    per_version = -(-files // len(VERSIONS))
    count = max(1, per_version // 100)
    modules = [f"Microsoft.Kettle.{word.capitalize()}" for word in WORDS[:count]]
    names = []
    for version in VERSIONS:
        for i in range(per_version):
            if len(names) == files:
                return names
            module = modules[i % len(modules)]
            verb, noun = WORDS[i % 7], WORDS[(i // 7) % len(WORDS)]
            name = f"{verb.capitalize()}-{noun.capitalize()}{i}"
            relative = f"{version}/{module}/{name}.md"
            os.makedirs(os.path.join(out, version, module), exist_ok=True)
            with open(os.path.join(out, relative), "w", encoding="utf-8") as f:
                f.write(page(rng, version, module, name))
            names.append(relative)
    return names


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("out", help="the folder to write (created if needed)")
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    names = make_tree(args.out, args.files, args.seed)
    print(f"make_tree: {len(names):,} files under {args.out}")


if __name__ == "__main__":
    main()
