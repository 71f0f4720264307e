// The second example operator, WebApp, written with controller-runtime, for the book's comparison page.
//
// Same behaviour as webapp: the owned Deployment and Service (created or updated, with controller
// references), sized from the spec, the Available condition with its printer columns and
// observedGeneration, Events on create and scale, the finalizer that deletes both, leader
// election, metrics and health probes. The CRD and RBAC manifests come from controller-gen (the
// markers below); kubebuilder's scaffold (Makefile, kustomize, DeepCopy code) is not counted, nor
// are the objects' literals, in webapp_controller_runtime_objects.go like webapp_objects.rs.
// Not compiled here: the Go module proxy is out of reach; gofmt-formatted by hand.
package main

import (
	"context"
	"fmt"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// WebAppSpec runs Image as Replicas pods behind a Service on Port.
type WebAppSpec struct {
	Image    string `json:"image"`
	Replicas int32  `json:"replicas"`
	Port     int32  `json:"port"`
}

// WebAppStatus is what the operator observed.
type WebAppStatus struct {
	Replicas   int32              `json:"replicas,omitempty"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// WebApp runs an image as a Deployment behind a Service.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=wa
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].reason`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Available")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WebApp struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WebAppSpec   `json:"spec"`
	Status            WebAppStatus `json:"status,omitempty"`
}

// WebAppList is a list of WebApps.
// +kubebuilder:object:root=true
type WebAppList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WebApp `json:"items"`
}

var groupVersion = schema.GroupVersion{Group: "apps.kubeward.dev", Version: "v1"}

const cleanup = "apps.kubeward.dev/cleanup"

// WebAppReconciler reconciles WebApps.
type WebAppReconciler struct {
	client.Client
	Scheme   *runtime.Scheme
	Recorder record.EventRecorder
}

// +kubebuilder:rbac:groups=apps.kubeward.dev,resources=webapps,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=apps.kubeward.dev,resources=webapps/status;webapps/finalizers,verbs=update;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

func (r *WebAppReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var app WebApp
	if err := r.Get(ctx, req.NamespacedName, &app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	owned := metav1.ObjectMeta{Name: app.Name, Namespace: app.Namespace}
	deployment, service := &appsv1.Deployment{ObjectMeta: owned}, &corev1.Service{ObjectMeta: owned}
	if !app.DeletionTimestamp.IsZero() {
		if !controllerutil.ContainsFinalizer(&app, cleanup) {
			return ctrl.Result{}, nil
		}
		deleted := 0
		for _, obj := range []client.Object{deployment, service} {
			if err := r.Delete(ctx, obj); err == nil {
				deleted++
			} else if !apierrors.IsNotFound(err) {
				return ctrl.Result{}, err
			}
		}
		r.Recorder.Eventf(&app, corev1.EventTypeNormal, "Deleted", "deleted %d", deleted)
		controllerutil.RemoveFinalizer(&app, cleanup)
		return ctrl.Result{}, r.Update(ctx, &app)
	}
	if controllerutil.AddFinalizer(&app, cleanup) {
		if err := r.Update(ctx, &app); err != nil {
			return ctrl.Result{}, err
		}
	}
	deployed, err := controllerutil.CreateOrUpdate(ctx, r.Client, deployment, func() error {
		setDeploymentSpec(deployment, &app)
		return controllerutil.SetControllerReference(&app, deployment, r.Scheme)
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	served, err := controllerutil.CreateOrUpdate(ctx, r.Client, service, func() error {
		setServiceSpec(service, &app)
		return controllerutil.SetControllerReference(&app, service, r.Scheme)
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	if deployed == controllerutil.OperationResultCreated || served == controllerutil.OperationResultCreated {
		r.Recorder.Event(&app, corev1.EventTypeNormal, "Created", "created its objects")
	}
	replicas, ready := app.Spec.Replicas, deployment.Status.AvailableReplicas
	if deployed == controllerutil.OperationResultUpdated && app.Status.Replicas != replicas {
		r.Recorder.Eventf(&app, corev1.EventTypeNormal, "Scaled", "scaled from %d to %d replicas", app.Status.Replicas, replicas)
	}
	available := metav1.ConditionFalse
	if ready >= replicas {
		available = metav1.ConditionTrue
	}
	app.Status.Replicas = replicas
	meta.SetStatusCondition(&app.Status.Conditions, metav1.Condition{
		Type: "Available", Status: available, Reason: "Replicas", ObservedGeneration: app.Generation,
		Message: fmt.Sprintf("%d of %d replicas available", ready, replicas),
	})
	return ctrl.Result{}, r.Status().Update(ctx, &app)
}

func main() {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = (&scheme.Builder{GroupVersion: groupVersion}).Register(&WebApp{}, &WebAppList{}).AddToScheme(s)
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme: s, LeaderElection: true, LeaderElectionID: "webapp", HealthProbeBindAddress: ":8081",
	})
	if err != nil {
		os.Exit(1)
	}
	reconciler := &WebAppReconciler{Client: mgr.GetClient(), Scheme: s, Recorder: mgr.GetEventRecorderFor("webapp")}
	err = ctrl.NewControllerManagedBy(mgr).For(&WebApp{}).Owns(&appsv1.Deployment{}).Owns(&corev1.Service{}).Complete(reconciler)
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
