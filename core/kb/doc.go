// Package kb is the knowledge base: bases of Markdown pages imported by the
// operator (the admin API, `tollgate kb import`, the embedded default's
// docs), a BM25 search index on bleve kept beside the store, and the reads
// the REST API and the MCP server answer, each limited to the bases the
// calling account may read (PRODUCT.md §2 Knowledge bases, §7 Knowledge
// base; the spec's Knowledge page, Knowledge-base REST and MCP).
//
// The store is the truth: the index holds no text, only terms, and follows
// the store's page change log, so it is rebuilt from the store when it is
// missing or of an older schema, and each gateway instance on a shared
// store keeps its own index up to date within a second.
//
// The package is a service-level package: it imports the store's roles and
// the hosted-files store, never the pipeline, plugins or the server.
// docs/kb.md is the operator's guide.
package kb
