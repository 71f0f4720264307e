// The example operator written with controller-runtime, for the book's comparison page.
//
// Same behaviour as configmap_generator: the owned ConfigMap (created or updated, repaired when
// edited), the finalizer, status with a Ready condition and observedGeneration, Events, leader
// election, metrics and health probes. The CRD and RBAC manifests come from controller-gen
// (the markers below); kubebuilder's scaffold (Makefile, kustomize, DeepCopy code) is not counted.
// Not compiled here: the Go module proxy is out of reach; gofmt-formatted by hand.
package main

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// ConfigMapGeneratorSpec asks for a ConfigMap holding Content.
type ConfigMapGeneratorSpec struct {
	Content string `json:"content"`
}

// ConfigMapGeneratorStatus is what the operator observed and did.
type ConfigMapGeneratorStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// ConfigMapGenerator asks for a ConfigMap holding spec.content.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cmg
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
type ConfigMapGenerator struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ConfigMapGeneratorSpec   `json:"spec"`
	Status            ConfigMapGeneratorStatus `json:"status,omitempty"`
}

// ConfigMapGeneratorList is a list of ConfigMapGenerators.
// +kubebuilder:object:root=true
type ConfigMapGeneratorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ConfigMapGenerator `json:"items"`
}

var groupVersion = schema.GroupVersion{Group: "demo.kubeward.dev", Version: "v1"}

const cleanup = "demo.kubeward.dev/cleanup"

// Generator reconciles ConfigMapGenerators.
type Generator struct {
	client.Client
	Scheme   *runtime.Scheme
	Recorder record.EventRecorder
}

// +kubebuilder:rbac:groups=demo.kubeward.dev,resources=configmapgenerators,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=demo.kubeward.dev,resources=configmapgenerators/status;configmapgenerators/finalizers,verbs=update;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

func (r *Generator) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var generator ConfigMapGenerator
	if err := r.Get(ctx, req.NamespacedName, &generator); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: generator.Name + "-generated", Namespace: generator.Namespace}}
	if !generator.DeletionTimestamp.IsZero() {
		if controllerutil.ContainsFinalizer(&generator, cleanup) {
			if err := client.IgnoreNotFound(r.Delete(ctx, cm)); err != nil {
				return ctrl.Result{}, err
			}
			r.Recorder.Eventf(&generator, corev1.EventTypeNormal, "Deleted", "deleted ConfigMap %s", cm.Name)
			controllerutil.RemoveFinalizer(&generator, cleanup)
			return ctrl.Result{}, r.Update(ctx, &generator)
		}
		return ctrl.Result{}, nil
	}
	if controllerutil.AddFinalizer(&generator, cleanup) {
		if err := r.Update(ctx, &generator); err != nil {
			return ctrl.Result{}, err
		}
	}
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, cm, func() error {
		cm.Data = map[string]string{"content": generator.Spec.Content}
		return controllerutil.SetControllerReference(&generator, cm, r.Scheme)
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	if generator.Status.ObservedGeneration == generator.Generation {
		return ctrl.Result{}, nil
	}
	generator.Status.ObservedGeneration = generator.Generation
	meta.SetStatusCondition(&generator.Status.Conditions, metav1.Condition{
		Type: "Ready", Status: metav1.ConditionTrue, Reason: "Generated",
		Message: fmt.Sprintf("ConfigMap %s holds the content", cm.Name), ObservedGeneration: generator.Generation,
	})
	if err := r.Status().Update(ctx, &generator); err != nil {
		return ctrl.Result{}, err
	}
	r.Recorder.Eventf(&generator, corev1.EventTypeNormal, "Generated", "applied ConfigMap %s for generation %d", cm.Name, generator.Generation)
	return ctrl.Result{}, nil
}

func main() {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = (&scheme.Builder{GroupVersion: groupVersion}).Register(&ConfigMapGenerator{}, &ConfigMapGeneratorList{}).AddToScheme(s)
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme: s, LeaderElection: true, LeaderElectionID: "configmap-generator", HealthProbeBindAddress: ":8081",
	})
	if err != nil {
		os.Exit(1)
	}
	generator := &Generator{Client: mgr.GetClient(), Scheme: s, Recorder: mgr.GetEventRecorderFor("configmap-generator")}
	err = ctrl.NewControllerManagedBy(mgr).For(&ConfigMapGenerator{}).Owns(&corev1.ConfigMap{}).Complete(generator)
	if err != nil {
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		os.Exit(1)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		os.Exit(1)
	}
}
