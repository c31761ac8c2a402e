#!/usr/bin/python3
"""onnxruntime's outputs for the good models of tests/model/make_models.py, which
tests/model/test_model_run.c compares gaio_model_run's against.

Usage: make_reference.py MODEL_DIR [--seed N] [--venv DIR]

For every good model in MODEL_DIR/manifest.txt, runs it with onnxruntime's CPU
execution provider on random inputs, uniform in [-1, 1) (seeded: --seed, else
GAIO_TEST_SEED, else the clock; printed), with 2 for every symbolic dimension, and
writes MODEL_DIR/ref/NAME.in<i>.bin and NAME.out<i>.bin (raw little-endian, the
model's dtype, packed row major) and MODEL_DIR/ref/manifest.txt, one record per
model, tokens separated by spaces:

    model NAME FILE batch=B inputs=I outputs=O
                                   FILE relative to MODEL_DIR; B is the batch to give
                                   gaio_model_exec_create: 2 where the model has a
                                   symbolic dimension, else 0
    input DTYPE NDIM DIM... BIN    each graph input, in order, its shape resolved;
    output DTYPE NDIM DIM... BIN   BIN relative to MODEL_DIR/ref
    canary OUTPUT BIN WHAT...      for a model whose manifest record names a layer
                                   (canary=WEIGHT[,BIAS]): onnxruntime's output OUTPUT
                                   (same dtype and shape) of the model with output
                                   channel C of that layer zeroed (WEIGHT[C] and
                                   BIAS[C]), on the same inputs; WHAT is "WEIGHT
                                   channel C". One record per output, for every C in
                                   turn. tests/model/test_model_run.c checks that gaio's
                                   outputs differ from every canary by more than its
                                   f16 tolerance: that a wrong channel would be seen.
    end
    skip NAME FILE REASON...       onnxruntime refused the model, which ALLOWED_SKIPS
                                   lists for this onnxruntime: the C test prints REASON

Only the models in ALLOWED_SKIPS, each with the reason and the onnxruntime versions
it holds for (those that do not know the model's opset), may be skipped: any other
failure of onnxruntime, or of these models on a newer onnxruntime, fails the script
(and so the fixture, and the tests that need it). tests/model/test_model_run.c checks that
the reference holds every good model of MODEL_DIR/manifest.txt, run or skipped.

Where onnxruntime comes from: this python if it has it; else, given --venv DIR, a
virtual environment DIR made from this python with --system-site-packages (so that
Debian's numpy stays visible) and `pip install onnxruntime`, made once and reused,
and this script runs again in it. Without onnxruntime it fails, saying why: the
models are then untested, which must not pass as a skip.
"""
import os
import subprocess
import sys
import time

VENV_MARK = "GAIO_REFERENCE_IN_VENV"

# The models onnxruntime may refuse: FILE (relative to MODEL_DIR) -> (the first
# onnxruntime version that runs it, why older ones do not). Nothing else is skipped.
ALLOWED_SKIPS = {
    "cnn_opset17.onnx": ((1, 12), "opset 17 is newer than onnxruntime before 1.12 knows"),
    "linear_opset18.onnx": ((1, 14), "opset 18 is newer than onnxruntime before 1.14 knows"),
    "elementwise_opset20.onnx": ((1, 17), "opset 20 (Gelu) is newer than onnxruntime before 1.17 knows"),
}


def have_onnxruntime():
    try:
        import onnxruntime  # noqa: F401
        return True
    except ImportError:
        return False


def venv_python(venv):
    return os.path.join(venv, "bin", "python3")


def venv_has_ort(venv):
    py = venv_python(venv)
    return os.path.exists(py) and subprocess.run([py, "-c", "import numpy, onnxruntime"],
                                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def get_onnxruntime(venv):
    """Re-executes this script with a python that has onnxruntime, or exits."""
    if os.environ.get(VENV_MARK):
        sys.exit("make_reference.py: the venv %s was made but its python still cannot import onnxruntime" % venv)
    if not venv_has_ort(venv):
        print("make_reference.py: %s cannot import onnxruntime; installing it into the venv %s" %
              (sys.executable, venv), flush=True)
        if not os.path.exists(venv_python(venv)):
            r = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv])
            if r.returncode != 0:
                sys.exit("make_reference.py: cannot get onnxruntime: `%s -m venv --system-site-packages %s` failed "
                         "(Debian: apt-get install python3-venv)" % (sys.executable, venv))
        r = subprocess.run([venv_python(venv), "-m", "pip", "install", "--disable-pip-version-check", "onnxruntime"])
        if r.returncode != 0:
            sys.exit("make_reference.py: cannot get onnxruntime: `pip install onnxruntime` into %s failed (no "
                     "network? no wheel for this python?); or point GAIO_GOLDEN_PYTHON at a python that has it" % venv)
        if not venv_has_ort(venv):
            sys.exit("make_reference.py: cannot get onnxruntime: pip installed it into %s but `import numpy, "
                     "onnxruntime` fails there" % venv)
    env = dict(os.environ)
    env[VENV_MARK] = "1"
    py = venv_python(venv)
    os.execve(py, [py, os.path.abspath(__file__)] + sys.argv[1:], env)


# ---- the models' manifest ------------------------------------------------------

def good_models(model_dir):
    """(file, [input records], [output records], {key: value}) of every good model; a
    record is (name, dtype, [dims as strings]); the keys are the good record's."""
    out = []
    cur = None
    with open(os.path.join(model_dir, "manifest.txt")) as f:
        for line in f:
            tok = line.split()
            if not tok:
                continue
            if tok[0] == "good":
                cur = (tok[1], [], [], dict(t.split("=", 1) for t in tok[2:] if "=" in t))
            elif tok[0] in ("input", "output") and cur is not None:
                ndim = int(tok[3])
                rec = (tok[1], tok[2], tok[4:4 + ndim])
                assert len(rec[2]) == ndim, line
                (cur[1] if tok[0] == "input" else cur[2]).append(rec)
            elif tok[0] == "end" and cur is not None:
                out.append(cur)
                cur = None
    return out


def ref_name(rel):
    base = rel[:-5] if rel.endswith(".onnx") else rel
    return base.replace("/", "_").replace(".", "_")


def version_tuple(v):
    """(major, minor) of a version string such as 1.17.3 or 1.18.0.dev20240101+cu118."""
    parts = []
    for p in v.split("+")[0].split(".")[:2]:
        digits = "".join(ch for ch in p if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts + [0] * (2 - len(parts)))


def canaries(path, spec):
    """(WHAT, model bytes) for every output channel of the layer spec names
    ("WEIGHT[,BIAS]"): the model at path with that channel's weights (and bias) zeroed."""
    import numpy as np
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError as e:
        sys.exit("make_reference.py: the canaries need the onnx package, which %s cannot import (%s)" %
                 (sys.executable, e))
    names = spec.split(",")
    base = onnx.load(path)  # external data read in, so that the bytes stand alone
    arrays = {i.name: numpy_helper.to_array(i) for i in base.graph.initializer if i.name in names}
    if len(arrays) != len(names):
        sys.exit("make_reference.py: %s: canary=%s names initializers it does not have" % (path, spec))
    channels = arrays[names[0]].shape[0]
    if any(a.shape[0] != channels for a in arrays.values()):
        sys.exit("make_reference.py: %s: canary=%s: the first dimensions differ" % (path, spec))
    out = []
    for c in range(channels):
        m = onnx.ModelProto()
        m.CopyFrom(base)
        for init in m.graph.initializer:
            if init.name in arrays:
                a = arrays[init.name].copy()
                a[c] = 0
                init.CopyFrom(numpy_helper.from_array(a, init.name))
        out.append(("%s channel %d" % (names[0], c), m.SerializeToString()))
    return out


def main():
    args = sys.argv[1:]
    seed = venv = None
    for opt in ("--seed", "--venv"):
        if opt in args:
            i = args.index(opt)
            if i + 1 >= len(args):
                sys.exit("make_reference.py: %s needs a value" % opt)
            if opt == "--seed":
                seed = int(args[i + 1], 0)
            else:
                venv = args[i + 1]
            del args[i:i + 2]
    if len(args) != 1:
        sys.exit("usage: make_reference.py MODEL_DIR [--seed N] [--venv DIR]")
    model_dir = args[0]

    if not have_onnxruntime():
        if venv is None:
            sys.exit("make_reference.py: cannot import onnxruntime with %s; give --venv DIR to install it there, or "
                     "run a python that has it" % sys.executable)
        get_onnxruntime(venv)  # does not return

    import numpy as np
    import onnxruntime as ort

    if seed is None:
        env = os.environ.get("GAIO_TEST_SEED")
        seed = int(env, 0) if env else int(time.time() * 1000) & 0xFFFFFFFF
    seed &= 0xFFFFFFFF
    print("make_reference.py: %s, onnxruntime %s, numpy %s, seed %d (--seed or GAIO_TEST_SEED to replay)" %
          (sys.executable, ort.__version__, np.__version__, seed))

    np_types = {"f32": np.float32, "f16": np.float16, "s64": np.int64}
    ort_types = {"tensor(float)": "f32", "tensor(float16)": "f16", "tensor(int64)": "s64"}
    ref_dir = os.path.join(model_dir, "ref")
    os.makedirs(ref_dir, exist_ok=True)
    for f in os.listdir(ref_dir):  # nothing left from an earlier set of models
        os.remove(os.path.join(ref_dir, f))
    records = []
    nref = nskip = ncanary = 0
    models = good_models(model_dir)
    if not models:
        sys.exit("make_reference.py: no good model in %s/manifest.txt" % model_dir)
    unknown = set(ALLOWED_SKIPS) - {rel for rel, _, _, _ in models}
    if unknown:
        sys.exit("make_reference.py: ALLOWED_SKIPS names models make_models.py no longer writes: %s" %
                 " ".join(sorted(unknown)))
    ort_version = version_tuple(ort.__version__)

    def session(model, opts):
        return ort.InferenceSession(model, sess_options=opts, providers=["CPUExecutionProvider"])

    for index, (rel, ins, outs, keys) in enumerate(models):
        name = ref_name(rel)
        symbolic = any(not d.lstrip("-").isdigit() for _, _, dims in ins + outs for d in dims)
        batch = 2 if symbolic else 0

        def resolve(dims):
            return [int(d) if d.lstrip("-").isdigit() else batch for d in dims]

        # one stream per model, so that a model's inputs do not depend on the others
        rng = np.random.default_rng([seed, index])
        opts = ort.SessionOptions()
        # the plain graph: a reference that does not fuse what gaio is checked for
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        opts.intra_op_num_threads = 1
        opts.log_severity_level = 3  # not the warning about weights also listed as inputs
        try:
            sess = session(os.path.join(model_dir, rel), opts)
            feeds = {}
            for (iname, dt, dims), meta in zip(ins, sess.get_inputs()):
                assert meta.name == iname, "%s: onnxruntime's input %s, the manifest's %s" % (rel, meta.name, iname)
                feeds[iname] = rng.uniform(-1, 1, resolve(dims)).astype(np_types[dt])
            if len(sess.get_inputs()) != len(ins):
                raise RuntimeError("onnxruntime sees %d inputs, the manifest %d" % (len(sess.get_inputs()), len(ins)))
            results = sess.run([o[0] for o in outs], feeds)
        except Exception as e:  # onnxruntime's refusals have no common type
            reason = " ".join(str(e).split())[:400] or type(e).__name__
            allowed = ALLOWED_SKIPS.get(rel)
            if allowed is None or ort_version >= allowed[0]:
                sys.exit("make_reference.py: %s: onnxruntime %s failed on it, and %s: %s" % (
                    rel, ort.__version__, "no skip of it is allowed" if allowed is None else
                    "its skip is allowed only before onnxruntime %d.%d (%s)" % (allowed[0] + (allowed[1],)), reason))
            records.append("skip %s %s onnxruntime %s refused it (allowed: %s): %s" % (
                name, rel, ort.__version__, allowed[1], reason))
            print("make_reference.py: %s: SKIPPED (allowed: %s): onnxruntime refused it: %s" % (
                rel, allowed[1], reason))
            nskip += 1
            continue
        rec = ["model %s %s batch=%d inputs=%d outputs=%d" % (name, rel, batch, len(ins), len(outs))]
        for i, (iname, dt, dims) in enumerate(ins):
            bin_name = "%s.in%d.bin" % (name, i)
            a = feeds[iname]
            a.astype(a.dtype.newbyteorder("<")).tofile(os.path.join(ref_dir, bin_name))
            rec.append("input %s %d %s %s" % (dt, a.ndim, " ".join(map(str, a.shape)), bin_name))
        for i, ((oname, dt, dims), meta, a) in enumerate(zip(outs, sess.get_outputs(), results)):
            # what the loader is checked against must be what onnxruntime computes
            if ort_types.get(meta.type) != dt or list(a.shape) != resolve(dims) or a.dtype != np_types[dt]:
                sys.exit("make_reference.py: %s: output %s: onnxruntime gives %s %s %s, the manifest says %s %s" %
                         (rel, oname, meta.type, a.dtype, list(a.shape), dt, resolve(dims)))
            if not np.all(np.isfinite(a)):
                sys.exit("make_reference.py: %s: output %s is not finite: a useless reference" % (rel, oname))
            bin_name = "%s.out%d.bin" % (name, i)
            np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tofile(os.path.join(ref_dir, bin_name))
            rec.append("output %s %d %s %s" % (dt, a.ndim, " ".join(map(str, a.shape)), bin_name))
        if "canary" in keys:
            for c, (what, data) in enumerate(canaries(os.path.join(model_dir, rel), keys["canary"])):
                got = session(data, opts).run([o[0] for o in outs], feeds)  # a failure here fails the script
                for i, (a, want) in enumerate(zip(got, results)):
                    assert a.shape == want.shape and a.dtype == want.dtype, "%s: %s: output %d" % (rel, what, i)
                    if not np.all(np.isfinite(a)):
                        sys.exit("make_reference.py: %s: %s: output %d is not finite" % (rel, what, i))
                    bin_name = "%s.canary%d.out%d.bin" % (name, c, i)
                    np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tofile(os.path.join(ref_dir, bin_name))
                    rec.append("canary %d %s %s" % (i, bin_name, what))
                ncanary += 1
        rec.append("end")
        records += rec
        nref += 1
    with open(os.path.join(ref_dir, "manifest.txt"), "w") as f:
        f.write("\n".join(records) + "\n")
    print("make_reference.py: %d models run (%d canaries: a channel zeroed), %d refused by onnxruntime "
          "(allowed), in %s" % (nref, ncanary, nskip, ref_dir))
    if nref == 0:
        sys.exit("make_reference.py: onnxruntime ran none of the models")


if __name__ == "__main__":
    main()
