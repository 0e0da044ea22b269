module github.com/zclconf/go-cty

require (
	github.com/apparentlymart/go-textseg/v15 v15.0.0
	github.com/apparentlymart/go-textseg/v17 v17.0.1
	github.com/google/go-cmp v0.3.1
	github.com/vmihailenco/msgpack/v5 v5.3.5
	golang.org/x/text v0.11.0
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
)

go 1.25
