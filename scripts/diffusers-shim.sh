# shellcheck shell=bash
# Sourced (not run) by the diffusers golden generators (gen-flux-, gen-img2img-, gen-wan-goldens.sh):
# what they share to run diffusers' own files from ../shared/diffusers-58eb52c (or a bare git
# directory at $DIFFUSERS_COMMIT) on Debian's python3-torch, without installing diffusers.
#   ensure_python_debs IMPORTS PKG...  installs the Debian packages when `import IMPORTS` fails
#   getsrc PATH DEST                   copies diffusers' file PATH (from $SRC) to DEST
#   diffusers_shim [LINE...]           writes the stand-in package files under $TMP/pkg: only the
#                                      names the real files import; whatever is not on the golden
#                                      computation path raises if reached. LINEs are appended to
#                                      diffusers/utils/__init__.py (extra imports a generator needs).
# Callers set SRC, DIFFUSERS_COMMIT, PY, TMP and D=$TMP/pkg/diffusers.

ensure_python_debs() {
	local imports=$1
	shift
	if ! $PY -c "import $imports" 2>/dev/null; then
		echo "installing $* ..." >&2
		local SUDO=
		[ "$(id -u)" -eq 0 ] || SUDO=sudo
		export DEBIAN_FRONTEND=noninteractive
		local lock=(-o DPkg::Lock::Timeout=600)
		$SUDO apt-get "${lock[@]}" install -y -qq --no-install-recommends "$@" >/dev/null 2>&1 ||
			{ $SUDO apt-get "${lock[@]}" update -qq && $SUDO apt-get "${lock[@]}" install -y -qq --no-install-recommends "$@" >/dev/null; }
	fi
}

getsrc() {
	mkdir -p "$(dirname "$2")"
	if [ -f "$SRC/$1" ]; then
		cp "$SRC/$1" "$2"
	else
		git --git-dir="$SRC" show "$DIFFUSERS_COMMIT:$1" >"$2"
	fi
}

diffusers_shim() {
	mkdir -p "$TMP/pkg/huggingface_hub"
	cat >"$D/__init__.py" <<'EOF'
__version__ = "0.40.0.dev0"
EOF
	: >"$D/schedulers/__init__.py"
	cat >"$D/utils/__init__.py" <<'EOF'
import logging as _logging
class logging:  # diffusers.utils.logging's get_logger
    get_logger = staticmethod(_logging.getLogger)
def _unreachable(*a, **k):
    raise RuntimeError("stub reached: not part of the golden computation")
CONFIG_NAME = "config.json"
HUGGINGFACE_CO_RESOLVE_ENDPOINT = "https://huggingface.co"
class DummyObject(type):
    pass
deprecate = extract_commit_hash = http_user_agent = _unreachable
def is_scipy_available():
    return False
class PushToHubMixin:
    pass
from .outputs import BaseOutput
EOF
	local line
	for line in "$@"; do
		printf '%s\n' "$line" >>"$D/utils/__init__.py"
	done
	cat >"$D/utils/import_utils.py" <<'EOF'
def is_torch_available():
    return True
def is_torch_version(op, v):
    import operator, torch
    from packaging import version
    ops = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne}
    return ops[op](version.parse(version.parse(torch.__version__).base_version), version.parse(v))
EOF
	cat >"$D/utils/torch_utils.py" <<'EOF'
import ast, logging, torch
logger = logging.getLogger(__name__)
def _take(path, name):
    src = open(path).read()
    for node in ast.parse(src).body:
        if getattr(node, "name", None) == name:
            return ast.get_source_segment(src, node)
    raise KeyError(name)
exec(compile("from __future__ import annotations\n" + _take(__file__.replace("pkg/diffusers/utils/torch_utils.py", "up/torch_utils.py"), "randn_tensor"), "torch_utils.py", "exec"))
EOF
	cat >"$TMP/pkg/huggingface_hub/__init__.py" <<'EOF'
def _unreachable(*a, **k):
    raise RuntimeError("stub reached")
DDUFEntry = object
create_repo = hf_hub_download = _unreachable
EOF
	cat >"$TMP/pkg/huggingface_hub/utils.py" <<'EOF'
class EntryNotFoundError(Exception): pass
class HfHubHTTPError(Exception): pass
class RepositoryNotFoundError(Exception): pass
class RevisionNotFoundError(Exception): pass
def validate_hf_hub_args(f):
    return f
EOF
}
