// Package familyfuzz holds the fuzz target of every media family's
// request rules: each family's Plan, on every create route its Spec
// declares, so a new family or route joins by being listed here once.
package familyfuzz
