// Package images holds the image family's rules, the spec's images part
// (POST /v1/images/generations and /v1/images/edits), once for every
// plugin that serves images:
//
//   - Spec: the family's contract with the gateway (routes, unit, task
//     vocabulary, limits and timeouts);
//   - Parse: the request's validation, every numbered rule that is the
//     gateway's to check (prompt, n, response_format, size, reference
//     images, edits without a reference);
//   - Model: the model block's family settings, and from them the units to
//     hold (n, max(n, grid), the area tier) and to settle (images
//     returned, their tier by actual size, never above the hold);
//   - Shape: the upstream request's shaping (n sent as 1, the aspect ratio
//     and --sd/--hd of fixed-grid models, size dropped where ignored);
//   - Render: the synchronous answer as the client gets it, with the files
//     the gateway hosts at their slots; Failed: an upstream refusal.
//
// It speaks no vendor's wire: a plugin parses with it, sends its vendor's
// request, and renders what came back with it. Package imagestest is the
// suite every image plugin passes.
package images
