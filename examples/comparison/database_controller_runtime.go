// The third example operator, Database, written with controller-runtime, for the book's comparison page.
//
// Same behaviour as database: the owned StatefulSet and headless Service (created or updated, with
// controller references, so the garbage collector deletes them with their owner), sized from the
// spec, the Ready condition with its printer columns and observedGeneration, an Event per object
// created, leader election, metrics and health probes. The CRD and RBAC manifests come from
// controller-gen (the markers below); kubebuilder's scaffold (Makefile, kustomize, DeepCopy code)
// is not counted, nor are the objects' literals, in database_controller_runtime_objects.go like
// database_objects.rs. Not here, because controller-runtime has none: failures (such as the
// refused storage change) reported on the condition.
// Not compiled here: the Go module proxy is out of reach; gofmt-formatted by hand.
package main

import (
	"context"
	"fmt"
	"os"

	appsv1 "k8s.io/api/apps/v1"
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

// DatabaseSpec runs Image as Replicas pods, each with a volume of Storage (a quantity: 1Gi).
type DatabaseSpec struct {
	Image    string `json:"image"`
	Replicas int32  `json:"replicas"`
	Storage  string `json:"storage"`
}

// DatabaseStatus is what the operator observed.
type DatabaseStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// Database runs as a StatefulSet behind a headless Service.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=db
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Database struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              DatabaseSpec   `json:"spec"`
	Status            DatabaseStatus `json:"status,omitempty"`
}

// DatabaseList is a list of Databases.
// +kubebuilder:object:root=true
type DatabaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Database `json:"items"`
}

var groupVersion = schema.GroupVersion{Group: "data.kubeward.dev", Version: "v1"}

// DatabaseReconciler reconciles Databases.
type DatabaseReconciler struct {
	client.Client
	Scheme   *runtime.Scheme
	Recorder record.EventRecorder
}

// +kubebuilder:rbac:groups=data.kubeward.dev,resources=databases,verbs=get;list;watch
// +kubebuilder:rbac:groups=data.kubeward.dev,resources=databases/status,verbs=update;patch
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

func (r *DatabaseReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var db Database
	if err := r.Get(ctx, req.NamespacedName, &db); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	owned := metav1.ObjectMeta{Name: db.Name, Namespace: db.Namespace}
	set, service := &appsv1.StatefulSet{ObjectMeta: owned}, &corev1.Service{ObjectMeta: owned}
	served, err := controllerutil.CreateOrUpdate(ctx, r.Client, service, func() error {
		setServiceSpec(service, &db)
		return controllerutil.SetControllerReference(&db, service, r.Scheme)
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	if served == controllerutil.OperationResultCreated {
		r.Recorder.Eventf(&db, corev1.EventTypeNormal, "Created", "Created Service %s", db.Name)
	}
	stored, err := controllerutil.CreateOrUpdate(ctx, r.Client, set, func() error {
		setStatefulSetSpec(set, &db)
		return controllerutil.SetControllerReference(&db, set, r.Scheme)
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	if stored == controllerutil.OperationResultCreated {
		r.Recorder.Eventf(&db, corev1.EventTypeNormal, "Created", "Created StatefulSet %s", db.Name)
	}
	replicas, ready := db.Spec.Replicas, set.Status.ReadyReplicas
	holds := metav1.ConditionFalse
	if ready >= replicas {
		holds = metav1.ConditionTrue
	}
	db.Status.ObservedGeneration = db.Generation
	meta.SetStatusCondition(&db.Status.Conditions, metav1.Condition{
		Type: "Ready", Status: holds, Reason: "Replicas", ObservedGeneration: db.Generation,
		Message: fmt.Sprintf("%d of %d replicas ready", ready, replicas),
	})
	return ctrl.Result{}, r.Status().Update(ctx, &db)
}

func main() {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = (&scheme.Builder{GroupVersion: groupVersion}).Register(&Database{}, &DatabaseList{}).AddToScheme(s)
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme: s, LeaderElection: true, LeaderElectionID: "database", HealthProbeBindAddress: ":8081",
	})
	if err != nil {
		os.Exit(1)
	}
	reconciler := &DatabaseReconciler{Client: mgr.GetClient(), Scheme: s, Recorder: mgr.GetEventRecorderFor("database")}
	err = ctrl.NewControllerManagedBy(mgr).For(&Database{}).Owns(&appsv1.StatefulSet{}).Owns(&corev1.Service{}).Complete(reconciler)
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
