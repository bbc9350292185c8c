// Package files hosts the results the gateway serves itself (base64 images
// turned into URLs, audio, knowledge-base sources): a blob store behind
// gocloud.dev/blob, signed expiring links, the handler that serves them and
// the sweep that deletes files past their retention (PRODUCT.md §1 files, §7
// Hosted results).
//
// Everything a file needs lives with its blob: the id carries the file's
// expiry (so links, the handler and the sweep never read another store), and
// the blob's attributes carry its content type, owner and suggested name. A
// restart keeps every file and every link; changing the signing secret
// invalidates every link handed out before.
//
// A local directory is localblob's (one file per blob, its attributes in a
// header), with fileblob beside it for the files earlier releases wrote
// there (content and attributes sidecar).
//
// The package is a service-level package: it imports foundation packages
// (core/apierr) and never the pipeline, the store, plugins or the server.
// docs/files.md describes the layout, the link format and the URL schemes.
package files
