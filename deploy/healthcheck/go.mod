module github.com/tenstorrent/tt-media-server-go/deploy/healthcheck

go 1.26.8
