// Package netns runs code inside a network namespace and names namespaces by
// inode, the identity the kernel's listener table uses. Linux only.
package netns
