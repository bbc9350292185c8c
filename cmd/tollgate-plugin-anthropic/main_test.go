package main

import (
	"testing"

	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
)

func TestBinary(t *testing.T) {
	vt.CheckBinary(t, vt.BinaryCase{Name: "anthropic", Protocol: "anthropic_messages", Model: "claude-sonnet-4-5",
		Path: "/v1/messages", AuthHeader: "X-Api-Key", AuthValue: "key-1"})
}
