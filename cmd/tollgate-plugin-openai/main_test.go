package main

import (
	"testing"

	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
)

func TestBinary(t *testing.T) {
	vt.CheckBinary(t, vt.BinaryCase{Name: "openai", Protocol: "openai_chat", Model: "gpt-4o-mini",
		Path: "/v1/chat/completions", AuthHeader: "Authorization", AuthValue: "Bearer key-1"})
}
