package prober

// SubscribeResults implements StatusSource.
func (m *Manager) SubscribeResults(buffer int) (<-chan ResultChange, func()) {
	return m.changes.Subscribe(buffer)
}

// SubscribeEvents implements StatusSource.
func (m *Manager) SubscribeEvents(buffer int) (<-chan Event, func()) {
	return m.events.Subscribe(buffer)
}
