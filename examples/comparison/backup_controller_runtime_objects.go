// The object the controller-runtime Backup owns, spelled out as in backup_objects.rs: the same in
// any framework, so not counted. Not compiled here, like backup_controller_runtime.go.
package main

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// setCronJobSpec makes cronJob run backup's image on its schedule, keeping Keep finished Jobs.
func setCronJobSpec(cronJob *batchv1.CronJob, backup *Backup) {
	cronJob.Spec.Schedule = backup.Spec.Schedule
	cronJob.Spec.ConcurrencyPolicy = batchv1.ForbidConcurrent
	cronJob.Spec.SuccessfulJobsHistoryLimit = ptr.To(backup.Spec.Keep)
	pod := &cronJob.Spec.JobTemplate.Spec.Template.Spec
	pod.RestartPolicy = corev1.RestartPolicyOnFailure
	pod.Containers = []corev1.Container{{Name: "backup", Image: backup.Spec.Image}}
}
