module github.com/kavach-dev/kavach

go 1.26.8

require (
	github.com/google/go-cmp v0.7.0
	github.com/klauspost/compress v1.20.4
)
