#!/usr/bin/env python3
"""The malformed-input matrix: every file kind ferry reads, damaged in the
ways users meet, given to every command that reads it. Each case checks
three things about the failure:
  - the exit code is 1 to 125 (not a signal, not 126/127 "cannot run");
  - stderr names the file (its path) and the field (a case's own words:
    a config key, a dataset, a tensor, a JSON field, a header part);
  - stderr names a fix (a case's own words: "set", "recompile", "delete",
    "make it again", ...).

  malformed_inputs.py run BIN_DIR CONFIGS_DIR WORK_DIR   check every case
  malformed_inputs.py show BIN_DIR CONFIGS_DIR WORK_DIR  print each stderr

Prints one line per case and a total; exits 1 when any case fails.
"""
import json
import os
import shutil
import struct
import subprocess
import sys


def flip(path, offset, value=None):
    data = bytearray(open(path, "rb").read())
    data[offset] = value if value is not None else data[offset] ^ 0x55
    open(path, "wb").write(bytes(data))


def truncate(path, size):
    data = open(path, "rb").read()
    open(path, "wb").write(data[:size])


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def safetensors_header(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + n]), n, data


def rewrite_safetensors(path, header, data_section):
    text = json.dumps(header).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    open(path, "wb").write(struct.pack("<Q", len(text)) + text + data_section)


class Matrix:
    def __init__(self, bin_dir, configs, work):
        self.bin, self.configs, self.work = bin_dir, configs, work
        self.env = dict(os.environ, FERRY_CACHE_DIR=os.path.join(work, "cache"))
        self.cases = []

    def ferry(self, *args):
        return [os.path.join(self.bin, "ferry"), *args]

    def datagen(self, *args):
        return [os.path.join(self.bin, "ferry-datagen"), *args]

    def path(self, *parts):
        return os.path.join(self.work, *parts)

    def sh(self, argv):
        subprocess.run(argv, env=self.env, check=True, stdout=subprocess.DEVNULL)

    def case(self, kind, command, name, argv, file, field, fix, expect="fails"):
        """expect "fails": exit 1-125 with an error; "recovers": ferry mends
        what it can (a damaged cache entry is compiled again), exits 0 and
        says so on stderr or stdout."""
        self.cases.append((kind, command, name, argv, file, field, fix, expect))

    def copy(self, src, name):
        dst = self.path(name)
        if os.path.isdir(src):
            shutil.copytree(src, dst)
        else:
            shutil.copy(src, dst)
        return dst


def build(m):
    """Makes the good files, then one damaged copy per case."""
    tiny = m.path("tiny.yaml")
    base = open(os.path.join(m.configs, "bert-tiny.yaml")).read()
    write(tiny, base.replace("vocab_size: 30522", "vocab_size: 1000"))
    fxe = m.path("tiny.fxe")
    m.sh(m.ferry("compile", tiny, "-o", fxe))
    m.sh(m.ferry("train", fxe, "--steps", "1", "--log-every", "0", "--save", m.path("ck"),
                 "--metrics", m.path("run.jsonl")))
    step = m.path("ck", "step-00000001")
    m.sh(m.datagen("--format", "hdf5", "--vocab", "1000", "--samples", "16", "-o", m.path("good.hdf5")))
    m.sh(m.datagen("--format", "tfrecord", "--vocab", "1000", "--samples", "16", "-o",
                   m.path("good.tfrecord")))

    # --- configs: compile, plan, train, eval --------------------------------
    dup = m.path("dup.yaml")
    write(dup, base.replace("model:\n", "model:\n  layers: 3\n", 1))
    m.case("config", "compile", "a key given twice", m.ferry("compile", dup), dup,
           "model.layers", "keep one")
    typo = m.path("typo.yaml")
    write(typo, base.replace("hidden_size:", "hiden_size:", 1))
    m.case("config", "plan", "a misspelt key", m.ferry("plan", typo), typo,
           "hiden_size", "hidden_size")
    badtype = m.path("badtype.yaml")
    write(badtype, base.replace("layers: 2", "layers: two", 1))
    m.case("config", "train", "a word where a number goes",
           m.ferry("train", badtype, "--steps", "1"), badtype, "model.layers", "expects a positive integer")
    huge = m.path("huge.yaml")
    write(huge, base.replace("hidden_size: 128", "hidden_size: 1048576", 1))
    m.case("config", "eval", "an absurd size",
           m.ferry("eval", huge, "--checkpoint", step, "--data", m.path("good.tfrecord")),
           huge, "model.hidden_size", "65536")
    notyaml = m.path("notyaml.yaml")
    write(notyaml, "model: [unclosed\n")
    m.case("config", "compile", "not YAML", m.ferry("compile", notyaml), notyaml + ":2:1",
           "not valid YAML", "fix the syntax")

    # --- executables: train, eval, inspect ----------------------------------
    short = m.copy(fxe, "short.fxe")
    truncate(short, 100)
    m.case("executable", "train", "truncated", m.ferry("train", short, "--steps", "1"), short,
           "bytes", "compile")
    flipped = m.copy(fxe, "flipped.fxe")
    flip(flipped, os.path.getsize(flipped) // 2)
    m.case("executable", "inspect", "a flipped byte", m.ferry("inspect", flipped), flipped,
           "checksum", "compile")
    magic = m.copy(fxe, "magic.fxe")
    flip(magic, 0)
    m.case("executable", "eval", "not an executable",
           m.ferry("eval", magic, "--checkpoint", step, "--data", m.path("good.tfrecord")),
           magic, "magic", "compile")

    # --- checkpoints: train --resume, eval --checkpoint, train --init-checkpoint
    ck = m.copy(m.path("ck"), "ck-json")
    tj = os.path.join(ck, "step-00000001", "trainer.json")
    write(tj, open(tj).read().replace('"step"', '"stp"', 1))
    m.case("checkpoint", "train", "trainer.json without its step",
           m.ferry("train", fxe, "--steps", "2", "--resume", ck), tj, "'stp'",
           "resume from another step directory")
    ck = m.copy(m.path("ck"), "ck-model")
    model = os.path.join(ck, "step-00000001", "model.safetensors")
    truncate(model, os.path.getsize(model) - 100)
    m.case("checkpoint", "train", "model.safetensors cut short",
           m.ferry("train", fxe, "--steps", "2", "--resume", ck), model,
           "cls.seq_relationship.weight", "copy it again")
    ck = m.copy(m.path("ck"), "ck-opt")
    opt = os.path.join(ck, "step-00000001", "optimizer.safetensors")
    flip(opt, os.path.getsize(opt) - 10)
    m.case("checkpoint", "train", "optimizer.safetensors with a flipped byte",
           m.ferry("train", fxe, "--steps", "2", "--resume", ck), opt, "xxHash64",
           "copy it again")
    ck = m.copy(m.path("ck"), "ck-shape")
    model = os.path.join(ck, "step-00000001", "model.safetensors")
    header, n, data = safetensors_header(model)
    name = next(k for k in header if k != "__metadata__" and len(header[k]["shape"]) == 2)
    a, b = header[name]["shape"]
    header[name]["shape"] = [b, a] if a != b else [a * 2, b // 2]
    rewrite_safetensors(model, header, data[8 + n:])
    m.case("checkpoint", "eval", "a tensor of the wrong shape",
           m.ferry("eval", fxe, "--checkpoint", model, "--data", m.path("good.tfrecord")),
           model, name, "check that the config's model section")
    init = m.path("init.safetensors")
    write(init, "not safetensors at all")
    m.case("checkpoint", "train", "an init checkpoint that is not safetensors",
           m.ferry("train", fxe, "--steps", "1", "--init-checkpoint", init), init,
           "header length", "copy it again")

    # --- data: train --data, eval --data ------------------------------------
    crc = m.copy(m.path("good.tfrecord"), "crc.tfrecord")
    flip(crc, 40)
    m.case("data", "eval", "a TFRecord with a broken CRC",
           m.ferry("eval", fxe, "--checkpoint", step, "--data", crc), crc, "record 0",
           "make it again")
    seq64 = m.path("seq64.hdf5")
    m.sh(m.datagen("--format", "hdf5", "--seq", "64", "--vocab", "1000", "--samples", "8", "-o", seq64))
    m.case("data", "train", "HDF5 of another sequence length",
           m.ferry("train", fxe, "--steps", "1", "--data", seq64), seq64, "input_ids",
           "use data made for this model")
    junk = m.path("junk.hdf5")
    write(junk, "not data")
    m.case("data", "train", "neither format", m.ferry("train", fxe, "--steps", "1", "--data", junk),
           junk, "signature", "set data.format")

    # --- metrics: report ----------------------------------------------------
    partial = m.copy(m.path("run.jsonl"), "partial.jsonl")
    with open(partial, "a") as f:
        f.write('{"step": 2, "lo')
    m.case("metrics", "report", "a partial last line", m.ferry("report", partial), partial + ":2",
           "JSON object", "delete it")

    # --- data through eval: token ids the model has no embedding for -------
    wide = m.path("vocab30522.hdf5")
    m.sh(m.datagen("--format", "hdf5", "--vocab", "30522", "--samples", "8", "-o", wide))
    m.case("data", "eval", "token ids beyond the vocabulary",
           m.ferry("eval", fxe, "--checkpoint", step, "--data", wide), wide, "input_ids", "")

    # --- cache entries: compile through the cache, cache list, cache stats ---
    cache = m.path("cache")
    entry = next(os.path.join(cache, f) for f in os.listdir(cache) if f.endswith(".fxc"))
    flip(entry, os.path.getsize(entry) // 2)
    m.case("cache entry", "compile", "a flipped byte in the entry",
           m.ferry("compile", tiny, "-o", m.path("again.fxe")), entry, "checksum mismatch",
           "removing it and compiling again", expect="recovers")
    # In a cache of its own: the compile above rewrites its cache's stats.
    other = m.path("cache-stats")
    os.makedirs(other)
    stats = os.path.join(other, "stats")
    write(stats, "hits=3\ngarbage{\n")
    m.case("cache entry", "cache", "a damaged stats file",
           ["env", f"FERRY_CACHE_DIR={other}", *m.ferry("cache", "stats")], stats,
           "line 2 'garbage{'", "ferry cache clear", expect="recovers")

    # --- outputs: datagen, compile -o, train --save into a file -------------
    blocker = m.path("blocker")
    write(blocker, "a file where a directory is needed\n")
    m.case("output", "ferry-datagen", "a directory that is a file",
           m.datagen("--samples", "4", "-o", os.path.join(blocker, "x.hdf5")),
           os.path.join(blocker, "x.hdf5"), "directory", "choose a path")


def main():
    mode, bin_dir, configs, work = sys.argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    m = Matrix(bin_dir, configs, work)
    build(m)
    failures = 0
    for kind, command, name, argv, file, field, fix, expect in m.cases:
        run = subprocess.run(argv, env=m.env, capture_output=True, text=True, timeout=600)
        err = run.stderr.strip()
        if mode == "show":
            print(f"== {kind} / {command} / {name}: exit {run.returncode}\n{err}\n")
            continue
        problems = []
        if expect == "fails" and not 1 <= run.returncode <= 125:
            problems.append(f"exit code {run.returncode}, expected 1 to 125")
        if expect == "recovers" and run.returncode != 0:
            problems.append(f"exit code {run.returncode}, expected 0 (recovered)")
        if file not in err:
            problems.append(f"does not name the file {file}")
        if field and field not in err:
            problems.append(f"does not name the field '{field}'")
        if fix and fix not in err:
            problems.append(f"does not name the fix '{fix}'")
        status = "ok" if not problems else "FAIL: " + "; ".join(problems)
        print(f"{kind:<11} {command:<14} {name}: {status}")
        if problems:
            failures += 1
            print("  stderr: " + err.replace("\n", "\n          "))
    # A truncated cache entry shows as damaged in the listing (stdout).
    entry_cut = m.path("cut-cache")
    shutil.copytree(m.path("cache"), entry_cut)
    for f in os.listdir(entry_cut):
        if f.endswith(".fxc"):
            truncate(os.path.join(entry_cut, f), 50)
    listing = subprocess.run(m.ferry("cache", "list"), env=dict(m.env, FERRY_CACHE_DIR=entry_cut),
                             capture_output=True, text=True)
    if mode != "show":
        ok = listing.returncode == 0 and "unreadable: the entry is damaged" in listing.stdout \
            and "ferry cache clear" in listing.stdout
        print(f"{'cache entry':<11} {'cache':<14} a truncated entry in the listing: "
              f"{'ok' if ok else 'FAIL: ' + listing.stdout + listing.stderr}")
        failures += 0 if ok else 1
        m.cases.append(("cache entry", "cache", "listing", None, None, None, None, None))
    if mode != "show":
        kinds = sorted({c[0] for c in m.cases})
        commands = sorted({c[1] for c in m.cases})
        print(f"{len(m.cases)} cases over {len(kinds)} file kinds ({', '.join(kinds)}) and "
              f"{len(commands)} commands ({', '.join(commands)}): {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
