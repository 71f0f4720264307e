// The third example operator, Backup, written with controller-runtime, for the book's comparison page.
//
// Same behaviour as backup: the owned CronJob (created or updated, with a controller reference, so
// the garbage collector deletes it with its owner), the Ready condition with the last backup's time,
// its printer columns and observedGeneration, Events on create and on a schedule change, leader
// election, metrics and health probes. The CRD and RBAC manifests come from controller-gen (the
// markers below); kubebuilder's scaffold (Makefile, kustomize, DeepCopy code) is not counted, nor
// is the CronJob's literal, in backup_controller_runtime_objects.go like backup_objects.rs.
// Not compiled here: the Go module proxy is out of reach; gofmt-formatted by hand.
package main

import (
	"context"
	"fmt"
	"os"

	batchv1 "k8s.io/api/batch/v1"
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

// BackupSpec runs Image on Schedule (cron syntax), keeping the last Keep successful runs.
type BackupSpec struct {
	Schedule string `json:"schedule"`
	Image    string `json:"image"`
	Keep     int32  `json:"keep"`
}

// BackupStatus is what the operator observed.
type BackupStatus struct {
	LastBackup *metav1.Time       `json:"lastBackup,omitempty"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Backup runs an image on a schedule as a CronJob.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bk
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Backup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              BackupSpec   `json:"spec"`
	Status            BackupStatus `json:"status,omitempty"`
}

// BackupList is a list of Backups.
// +kubebuilder:object:root=true
type BackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Backup `json:"items"`
}

var groupVersion = schema.GroupVersion{Group: "backups.kubeward.dev", Version: "v1"}

// BackupReconciler reconciles Backups.
type BackupReconciler struct {
	client.Client
	Scheme   *runtime.Scheme
	Recorder record.EventRecorder
}

// +kubebuilder:rbac:groups=backups.kubeward.dev,resources=backups,verbs=get;list;watch
// +kubebuilder:rbac:groups=backups.kubeward.dev,resources=backups/status,verbs=update;patch
// +kubebuilder:rbac:groups=batch,resources=cronjobs,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

func (r *BackupReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var backup Backup
	if err := r.Get(ctx, req.NamespacedName, &backup); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	cronJob := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: backup.Name, Namespace: backup.Namespace}}
	var before string
	result, err := controllerutil.CreateOrUpdate(ctx, r.Client, cronJob, func() error {
		before = cronJob.Spec.Schedule
		setCronJobSpec(cronJob, &backup)
		return controllerutil.SetControllerReference(&backup, cronJob, r.Scheme)
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	schedule := backup.Spec.Schedule
	if result == controllerutil.OperationResultCreated {
		r.Recorder.Eventf(&backup, corev1.EventTypeNormal, "Created", "created CronJob %s", cronJob.Name)
	} else if result == controllerutil.OperationResultUpdated && before != schedule {
		r.Recorder.Eventf(&backup, corev1.EventTypeNormal, "Rescheduled", "schedule changed from %s to %s", before, schedule)
	}
	backup.Status.LastBackup = cronJob.Status.LastSuccessfulTime
	last := "none yet"
	if backup.Status.LastBackup != nil {
		last = backup.Status.LastBackup.String()
	}
	meta.SetStatusCondition(&backup.Status.Conditions, metav1.Condition{
		Type: "Ready", Status: metav1.ConditionTrue, Reason: "Scheduled", ObservedGeneration: backup.Generation,
		Message: fmt.Sprintf("runs on %s; last backup %s", schedule, last),
	})
	return ctrl.Result{}, r.Status().Update(ctx, &backup)
}

func main() {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = (&scheme.Builder{GroupVersion: groupVersion}).Register(&Backup{}, &BackupList{}).AddToScheme(s)
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme: s, LeaderElection: true, LeaderElectionID: "backup", HealthProbeBindAddress: ":8081",
	})
	if err != nil {
		os.Exit(1)
	}
	reconciler := &BackupReconciler{Client: mgr.GetClient(), Scheme: s, Recorder: mgr.GetEventRecorderFor("backup")}
	err = ctrl.NewControllerManagedBy(mgr).For(&Backup{}).Owns(&batchv1.CronJob{}).Complete(reconciler)
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
