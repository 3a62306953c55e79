#!/usr/bin/python3
"""Differential check of nextn's chat-template interpreter against Python Jinja2, as transformers
sets it up (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks; tools and documents None).

Renders random expressions (literals under filters, str/list/dict methods, operators and tests,
nested two deep) with both and prints each one whose output differs, an error on either side
counting as the output "ERROR". Offline tool: needs Python 3 with jinja2 (Debian's python3-jinja2),
which nextn itself never uses.

    tools/jinja_diff/jinja_diff.py build/nextn [--seed S] [--count N]

Known differences it still prints: tuples print as lists here; Jinja2's Markup type (|e, |safe,
|tojson); `is sameas` on small ints; the filters and tests nextn does not have (urlencode,
striptags, pprint, filesizeformat, truncate, batch, slice, format, `is escaped|filter|test`);
str % and str * bool; indent and wordcount on non-strings."""
import argparse
import json
import pathlib
import random
import subprocess
import sys
import tempfile

try:
    import jinja2.sandbox
except ImportError:
    sys.exit("jinja_diff.py needs Python's jinja2: install Debian's python3-jinja2")

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOKENIZER = ROOT / "tests/data/tokenizer/dense-tiny"

LITERALS = ["0", "1", "2", "-3", "7", "300", "0.5", "-2.25", "3.0", "1e20", "'abc'", "'A b'", "''",
            "' x '", "'1_0'", "'a,b'", "'Hello World'", "'12'", "[1, 2, 3]", "['b', 'a', 'B']", "[]",
            "{'a': 1, 'b': [2]}", "{}", "none", "true", "false", "[3, 1, 2]", "'aXa'", "(1, 2)",
            "[1.5, 2]", "'\\u00e9t\\u00e9'", "[[1, 2], [3]]"]
FILTERS = ["length", "upper", "lower", "title", "capitalize", "trim", "first", "last", "join(',')",
           "sort", "reverse|list", "unique|list", "list", "string", "int", "float", "abs", "round",
           "round(1)", "tojson", "default('d')", "sum", "min", "max", "replace('a', 'b')", "indent(2)",
           "wordcount", "count", "e", "safe", "items|list", "dictsort", "map('string')|list",
           "select|list", "reject|list", "batch(2)|list", "slice(2)|list", "truncate(3)", "center(7)",
           "format(1)", "trim('a')", "int(7)", "selectattr('a')|list", "attr('a')", "striptags",
           "urlencode", "xmlattr", "filesizeformat", "pprint"]
METHODS = [".split()", ".split(',')", ".strip()", ".startswith('a')", ".endswith('c')", ".upper()",
           ".lower()", ".replace('a', 'z')", ".find('b')", ".count('a')", ".title()",
           ".items()|list", ".keys()|list", ".values()|list", ".get('a')", ".get('z', 5)", ".lstrip()",
           ".rstrip('c')", ".isdigit()", ".isalpha()", ".splitlines()", ".capitalize()", ".swapcase()",
           ".zfill(5)", ".format(1)", ".join(['x','y'])", ".index(2)", ".rsplit(',', 1)",
           ".partition(',')", ".casefold()", ".ljust(5)", ".center(6, '*')"]
OPERATORS = ["+", "-", "*", "/", "//", "%", "**", "~", "==", "!=", "<", ">", "<=", ">=", "in", "not in",
             "and", "or"]
TESTS = ["defined", "none", "string", "number", "integer", "float", "mapping", "sequence", "iterable",
         "odd", "even", "divisibleby(3)", "lower", "upper", "true", "false", "boolean", "callable",
         "sameas(1)", "eq(1)", "in([1])", "escaped", "filter", "test"]


def expression(rng, depth=0):
    r = rng.random()
    if depth >= 2 or r < 0.3:
        return rng.choice(LITERALS)
    inner = lambda: expression(rng, depth + 1)
    if r < 0.5:
        return f"({inner()})|{rng.choice(FILTERS)}"
    if r < 0.65:
        return f"({inner()}){rng.choice(METHODS)}"
    if r < 0.85:
        return f"({inner()} {rng.choice(OPERATORS)} {inner()})"
    if r < 0.95:
        return f"({inner()} is {rng.choice(TESTS)})"
    return f"(not {inner()})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("nextn", help="the nextn binary")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=600, help="distinct expressions to render")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    config = json.loads((TOKENIZER / "tokenizer_config.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        model = pathlib.Path(tmp)
        (model / "tokenizer.json").symlink_to(TOKENIZER / "tokenizer.json")
        (model / "messages.json").write_text("[]")

        def python_render(template):
            try:
                return env.from_string(template).render(messages=[], tools=None, documents=None,
                                                        add_generation_prompt=True)
            except Exception:
                return "ERROR"

        def nextn_render(template):
            config["chat_template"] = template
            (model / "tokenizer_config.json").write_text(json.dumps(config))
            # Bytes, not text=True: universal newlines would turn a rendered \r\n into \n.
            r = subprocess.run([args.nextn, "template", str(model), str(model / "messages.json")],
                               capture_output=True)
            return r.stdout.decode() if r.returncode == 0 else "ERROR"

        expressions = set()
        while len(expressions) < args.count:
            expressions.add(expression(rng))
        differ = 0
        for e in sorted(expressions):
            template = "{{ " + e + " }}"
            want, got = python_render(template), nextn_render(template)
            if want != got:
                differ += 1
                print(f"{e}  | jinja2: {want!r}  | nextn: {got!r}")
    print(f"jinja_diff: {differ} of {len(expressions)} expressions differ", file=sys.stderr)


if __name__ == "__main__":
    main()
