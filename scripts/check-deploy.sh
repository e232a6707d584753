#!/usr/bin/env bash
# check-deploy.sh: validate the deployment artefacts offline (no Docker engine, no cluster).
#
#   * deploy/ (its own Go module): BuildKit's Dockerfile linter and parser on Dockerfile and
#     .dockerignore, `helm lint` / `helm template` on deploy/helm/tt-media-server with a strict
#     decode of every manifest into k8s.io/api types, the Grafana dashboard against
#     docs/OPERATIONS.md, run_uvicorn_equivalent.sh with a fake server binary, the sim image's
#     packages (Debian's ffmpeg, no recommends) and its server started as the image starts it
#     with the video service through a completed MP4 job (needs ffmpeg on PATH; the image build
#     itself needs a Docker engine and is not run here);
#   * deploy/healthcheck (the images' health probe, its own dependency-free module).
#
# The root `go test ./...` does not reach these modules; CI runs this script.
#
# helm v3.22.0 is built once into ~/.cache/tt-media-server-go/helm-v3.22.0 (3-11 minutes on 2
# cores) and reused by every clone on the machine. When it
# cannot be built (no module proxy, or CHECK_DEPLOY_NO_HELM_BUILD=1), the helm tests skip with
# a message and everything else still runs. HELM=/path/to/helm uses an existing binary.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

helm_version=v3.22.0
# Built once per machine, outside the repository, so fresh clones (CI) reuse it.
helm_dir=${TT_TOOLS_CACHE:-$HOME/.cache/tt-media-server-go}/helm-$helm_version
helm_bin=$helm_dir/helm

echo "== check-deploy: gofmt"
unformatted=$(gofmt -l deploy)
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"
	echo "$unformatted"
	exit 1
fi

if [ -z "${HELM:-}" ]; then
	if [ -x "$helm_bin" ]; then
		export HELM=$helm_bin
	elif command -v helm >/dev/null 2>&1; then
		export HELM
		HELM=$(command -v helm)
	elif [ "${CHECK_DEPLOY_NO_HELM_BUILD:-}" = 1 ]; then
		echo "== check-deploy: helm absent and CHECK_DEPLOY_NO_HELM_BUILD=1: helm tests will skip"
	else
		echo "== check-deploy: building helm $helm_version into $helm_dir (once per machine; takes minutes)"
		start=$(date +%s)
		if (cd deploy && mkdir -p "$helm_dir" && GOBIN="$helm_dir" timeout 1200 go install "helm.sh/helm/v3/cmd/helm@$helm_version"); then
			echo "   built in $(($(date +%s) - start)) s"
			export HELM=$helm_bin
		else
			echo "== check-deploy: WARNING: could not build helm $helm_version: helm tests will skip"
		fi
	fi
fi
[ -n "${HELM:-}" ] && echo "== check-deploy: helm: $HELM ($("$HELM" version --short 2>/dev/null || echo '?'))"

for mod in deploy deploy/healthcheck; do
	echo "== check-deploy: $mod: go vet"
	(cd "$mod" && go vet ./...)
	echo "== check-deploy: $mod: go test -race"
	(cd "$mod" && go test -race -count=1 -timeout 5m ./...)
done
echo "== check-deploy: ok"
