// Package architecture holds no code: its tests check the rules
// ARCHITECTURE.md states about the whole module — which room may import
// which, that imports point down, that probelet-controller links nothing
// of the node agent, and that every probelet.io/* name is defined once.
package architecture
