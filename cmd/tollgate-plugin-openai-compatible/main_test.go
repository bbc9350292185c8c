package main

import (
	"testing"

	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
)

func TestBinary(t *testing.T) {
	vt.CheckBinary(t, vt.BinaryCase{Name: "openai-compatible", Protocol: "openai_chat", Model: "llama3.1:8b",
		Path: "/v1/chat/completions", AuthHeader: "Authorization", AuthValue: "Bearer key-1"})
}
