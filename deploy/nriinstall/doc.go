// Package nriinstall installs probelet as a pre-installed NRI plugin: the
// executable as <plugin_path>/<idx>-<name> and its configuration as
// <plugin_config_path>/<idx>-<name>.conf, which containerd launches and reads
// when it starts.
//
// Every file appears atomically (written aside, then renamed), so a
// containerd that starts mid-install sees the old plugin or the new one,
// never half a binary. The executable is staged outside the plugin directory
// because NRI refuses to start ANY pre-installed plugin when the directory
// holds an executable whose name is not <idx>-<name>.
package nriinstall
