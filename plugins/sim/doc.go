// Package sim is the simulated vendor: a deterministic upstream that
// answers the four chat protocols with the real vendors' bodies and event
// streams, calls tools when the prompt asks, reports usage by a fixed rule,
// and injects faults chosen by prompt markers ([sim:error=503]) or channel
// settings. Engine is the answering core; Vendor puts it behind
// vendor.Vendor, and internal/vendorsim behind the vendors' HTTP APIs.
// docs/sim.md lists the markers and rules.
package sim
