// Package docs embeds the project's documentation, so the gateway's
// embedded default can serve it as its `default` knowledge base from any
// installed binary (docs/kb.md).
package docs

import "embed"

// FS holds the Markdown pages of this folder.
//
//go:embed *.md
var FS embed.FS
