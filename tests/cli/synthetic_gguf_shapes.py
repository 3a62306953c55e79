#!/usr/bin/python3
"""Checks that tools/synthetic_gguf/synthetic_gguf.py writes the release shapes nextn's own
synthetic models have (src/model/synthetic.cpp), so that README Speed's same-machine comparison
times both engines on the same shapes. The Python tool cannot call the C++ table, so each keeps a
copy; this reads the C++ one (its ReleaseShape fields in declared order, its kReleases rows and
the constants synthetic_config sets for every release) and compares. Exit 1 names each field that
differs; exit 2 when the C++ source no longer parses as expected (this check needs updating)."""
import importlib.util
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parents[2]
source = (root / "src/model/synthetic.cpp").read_text()


def report(message):
    print(message, file=sys.stderr)  # tests/cli_expect.sh's expect reads stderr


def parse_error(what):
    report(f"FAIL: cannot find {what} in src/model/synthetic.cpp; update {__file__}")
    sys.exit(2)


struct = re.search(r"struct ReleaseShape \{(.*?)\};", source, re.S)
if not struct:
    parse_error("struct ReleaseShape")
fields = []
for decl in struct.group(1).split(";"):
    decl = re.sub(r"//[^\n]*", "", decl).strip()
    if not decl:
        continue
    # "int q_heads, kv_heads" -> q_heads, kv_heads; "const char* name" -> name
    m = re.fullmatch(r"(?:const\s+)?\w+\s*\*?\s*(\w+(?:\s*,\s*\w+)*)", decl)
    if not m:
        parse_error(f"a ReleaseShape member declaration ({decl})")
    fields += [n.strip() for n in m.group(1).split(",")]
table = re.search(r"kReleases\[\] = \{(.*?)\n\};", source, re.S)
if not table:
    parse_error("the kReleases table")
releases = {}
for row in re.findall(r"\{([^{}]*)\}", table.group(1)):
    values = [v.strip() for v in row.split(",")]
    if len(values) != len(fields):
        parse_error(f"a kReleases row of {len(fields)} values ({row})")
    shape = dict(zip(fields, values))
    releases[shape["name"].strip('"')] = shape


def config_constant(member):
    m = re.search(rf"\bc\.{member} = ([0-9]+);", source)
    if not m:
        parse_error(f"'c.{member} = N;' in synthetic_config")
    return int(m.group(1))


spec = importlib.util.spec_from_file_location("synthetic_gguf", root / "tools/synthetic_gguf/synthetic_gguf.py")
tool = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tool)

# tool key -> the C++ value it must equal
common = {"vocab": config_constant("vocab_size"), "head_dim": config_constant("head_dim"),
          "rotary_dims": config_constant("rotary_dims"), "gdn_dim": config_constant("gdn_k_dim"),
          "conv_kernel": config_constant("conv_kernel")}
if config_constant("gdn_v_dim") != common["gdn_dim"]:
    parse_error("equal gdn_k_dim and gdn_v_dim (the tool has one gdn_dim)")
per_release = {"layers": "layers", "hidden": "hidden", "ffn": "ffn", "q_heads": "q_heads",
               "kv_heads": "kv_heads", "gdn_k": "gdn_k_heads", "gdn_v": "gdn_v_heads", "tied": "tied"}

failures = 0
checked = 0
for name, m in tool.MODELS.items():
    if name == "tiny":  # the tool's own test model; nextn has no such release
        continue
    if name not in releases:
        report(f"FAIL: synthetic_gguf.py has {name}, src/model/synthetic.cpp's kReleases does not")
        failures += 1
        continue
    r = releases[name]
    want = dict(common)
    for key, field in per_release.items():
        want[key] = r[field] == "true" if field == "tied" else int(r[field])
    if int(r["experts"]) != 0:
        report(f"FAIL: {name} is MoE in src/model/synthetic.cpp; synthetic_gguf.py writes dense models")
        failures += 1
    # GGUF's rope.dimension_sections count rotary pairs: they must add up to the rotary dims.
    want_sections = want["rotary_dims"] // 2
    checked += 1
    if sum(m["rope_sections"]) != want_sections:
        report(f"FAIL: {name} rope_sections {m['rope_sections']} add up to {sum(m['rope_sections'])}, "
              f"not rotary_dims / 2 = {want_sections}")
        failures += 1
    for key, value in want.items():
        checked += 1
        if m[key] != value:
            report(f"FAIL: {name} {key}: synthetic_gguf.py has {m[key]}, src/model/synthetic.cpp {value}")
            failures += 1
dense = [n for n, r in releases.items() if int(r["experts"]) == 0]
for name in dense:
    if name not in tool.MODELS:
        report(f"FAIL: dense release {name} of src/model/synthetic.cpp is missing from synthetic_gguf.py")
        failures += 1
report(f"synthetic_gguf shapes: {checked} values of {len(dense)} releases compared, {failures} differ")
sys.exit(1 if failures else 0)
