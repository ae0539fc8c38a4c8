package probestate

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	probes "github.com/probelet/probelet/api/probes/v1alpha1"
	"github.com/probelet/probelet/internal/termsafe"
)

// columns are `kubectl get podprobes`'s; -o wide adds the priority 1 ones.
var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "The pod's name."},
	{Name: "Ready", Type: "string", Description: "Containers probelet publishes Ready, of those it knows."},
	{Name: "Failing", Type: "string", Description: "Probes whose result is Failure: container/probe and the consecutive failures against the threshold."},
	{Name: "Restarts", Type: "integer", Description: "Kills probelet issued for the pod's probes (those it still holds)."},
	{Name: "Source", Type: "string", Description: "Answered, or why the pod's node did not answer."},
	{Name: "Age", Type: "string", Description: "The pod's age."},
	{Name: "Node", Type: "string", Priority: 1, Description: "The pod's node."},
	{Name: "Last Output", Type: "string", Priority: 1, Description: "The last output of the first failing probe, on one line."},
}

// lastOutputWidth cuts the wide column, as probectl cuts its own.
const lastOutputWidth = 50

// ConvertToTable is what kubectl get prints. Every cell a pod's owner
// writes (outputs, reasons) is escaped: kubectl prints cells as they are.
func (s *Storage) ConvertToTable(_ context.Context, obj runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	t := &metav1.Table{ColumnDefinitions: columns}
	if m, err := meta.ListAccessor(obj); err == nil {
		t.ResourceVersion, t.Continue, t.RemainingItemCount = m.GetResourceVersion(), m.GetContinue(), m.GetRemainingItemCount()
	}
	var items []probes.PodProbes
	switch o := obj.(type) {
	case *probes.PodProbes:
		items = []probes.PodProbes{*o}
	case *probes.PodProbesList:
		items = o.Items
	default:
		return nil, apierrors.NewInternalError(fmt.Errorf("no table for %T", obj))
	}
	for i := range items {
		p := &items[i]
		t.Rows = append(t.Rows, metav1.TableRow{Object: runtime.RawExtension{Object: p}, Cells: cells(p)})
	}
	return t, nil
}

func cells(p *probes.PodProbes) []any {
	ready, restarts := 0, 0
	var failing []string
	lastOutput := ""
	for _, c := range p.Containers {
		if c.Ready {
			ready++
		}
		restarts += len(c.Restarts)
		for _, pr := range c.Probes {
			if pr.Result != "Failure" {
				continue
			}
			failing = append(failing, fmt.Sprintf("%s/%s %d/%d", c.Name, strings.ToLower(pr.Type), pr.Consecutive, pr.Spec.FailureThreshold))
			if lastOutput == "" {
				lastOutput = oneLine(pr.LastOutput)
			}
		}
	}
	source := "Answered"
	if !p.Source.Answered {
		source = p.Source.Reason
	}
	readyCell := fmt.Sprintf("%d/%d", ready, len(p.Containers))
	if !p.Source.Answered {
		readyCell = "-"
	}
	age := "<unknown>"
	if !p.CreationTimestamp.IsZero() {
		age = duration.HumanDuration(p.Source.ObservedTime.Sub(p.CreationTimestamp.Time))
	}
	return []any{p.Name, readyCell, termsafe.String(orNone(strings.Join(failing, ","))), int64(restarts),
		termsafe.String(source), age, p.NodeName, termsafe.String(orNone(lastOutput))}
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > lastOutputWidth {
		s = s[:lastOutputWidth-3] + "..."
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
