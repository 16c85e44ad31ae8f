// Package policy composes the vision and language front ends, the Token
// Turing Machine (or another sequence model of package seq, chosen by
// Config.Model) and an action head into a robot policy, and holds what a
// policy needs around it: the action space, the checkpoint bundle and a
// safety filter that does not trust the model.
package policy
