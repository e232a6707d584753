// Package deploy holds no code: its tests validate the deployment artefacts of the repository
// offline (no Docker engine, no cluster, no network): the Dockerfile and .dockerignore with
// BuildKit's own linter and parser, the Helm chart with `helm lint`/`helm template` and a
// strict decode of every rendered manifest into k8s.io/api types, the Grafana dashboard
// against the metric names in docs/OPERATIONS.md, and run_uvicorn_equivalent.sh with a fake
// server binary.
//
// It is a module of its own so that BuildKit's and Kubernetes' dependency graphs stay out of
// the server's go.mod; the root `go test ./...` does not run it: scripts/check-deploy.sh does.
package deploy
