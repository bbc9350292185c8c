// Package kbapi is the knowledge base's HTTP face: the eight REST routes
// under /api/v1/ext/wiki, the MCP server at /mcp (the official go-sdk,
// streamable HTTP, stateless, JSON responses) and the operator's routes
// under /admin/v1/kbs. The REST and MCP handlers run after the read chain
// authenticated the key (the server wires them), so they take the account;
// they bill nothing and need no balance.
//
// A service-level package: it imports core/kb and foundation packages,
// never the pipeline or the server.
package kbapi
