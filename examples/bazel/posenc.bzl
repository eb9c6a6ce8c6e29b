"""Bazel macros that run posenc in a genrule: positional-encoding tables generated at build time.

posenc is the `posenc` program on the PATH Bazel gives actions: pass yours with --action_env=PATH (under
--incompatible_strict_action_env actions get /bin:/usr/bin:/usr/local/bin only). posenc itself is not an input of
the actions, so Bazel does not see it change: after upgrading posenc, run `bazel clean` (or change a table's args).
"""

# The file posenc writes beside an output of these formats (the .c's declarations, the .bin's .incbin header).
_COMPANION = {".c": ".h", ".cc": ".hh", ".cpp": ".hpp", ".cxx": ".hxx", ".bin": ".h"}

def _companion(out):
    for suffix, other in _COMPANION.items():
        if out.endswith(suffix):
            return out[:-len(suffix)] + other
    return None

def _quoted(words):
    return " ".join(["'" + w.replace("'", "'\\''") + "'" for w in words])

def posenc_table(name, command, args, out = None, srcs = [], **kwargs):
    """A genrule writing `posenc <command> <args> -o <out>` (and the file it writes beside out, if any).

    Args:
      name: the rule's name.
      command: a table command: generate, rope, alibi, sincos2d, relative or window.
      args: its options, a list of strings; $(location <src>) names a file of srcs (a config.json, a checkpoint).
      out: the output file, whose suffix picks the format (default: <name>.h). A .c also makes its .h, a .bin
        its .h: both are outputs of the rule.
      srcs: the files the table is read from (--config, --bias): a change to one reruns posenc.
      **kwargs: any other genrule attribute (visibility, tags, ...).
    """
    out = out or name + ".h"
    outs = [out]
    other = _companion(out)
    if other:
        outs.append(other)
    native.genrule(
        name = name,
        srcs = srcs,
        outs = outs,
        cmd = "posenc %s %s --quiet -o $(location %s)" % (command, _quoted(args), out),
        message = "Generating posenc table %s" % out,
        **kwargs
    )

def posenc_manifest(name, manifest, outs, srcs = [], **kwargs):
    """A genrule writing every table of a posenc.toml with `posenc build`, its outputs under this package's output
    folder (--output-dir $(RULEDIR)). outs lists them as the manifest spells them (`posenc build --list-outputs`
    prints them): Bazel needs every output declared, and keeps only those.

    Args:
      name: the rule's name.
      manifest: the posenc.toml.
      outs: its outputs, relative to the package.
      srcs: the files its entries read (bias checkpoints), relative to the manifest's folder.
      **kwargs: any other genrule attribute.
    """
    native.genrule(
        name = name,
        srcs = [manifest] + srcs,
        outs = outs,
        cmd = "posenc build $(location %s) --output-dir $(RULEDIR) --make-dirs --quiet" % manifest,
        message = "Building posenc manifest %s" % manifest,
        **kwargs
    )
