// The objects the controller-runtime Database owns, spelled out as in database_objects.rs: the
// same in any framework, so not counted. Not compiled here, like database_controller_runtime.go.
package main

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// setStatefulSetSpec makes set run db's image, sized from its spec, a volume of Storage per pod.
// A StatefulSet's volume templates are fixed once it exists: only a new set takes them.
func setStatefulSetSpec(set *appsv1.StatefulSet, db *Database) {
	labels := map[string]string{"app.kubernetes.io/name": db.Name}
	set.Labels = labels
	set.Spec.Replicas = ptr.To(db.Spec.Replicas)
	set.Spec.ServiceName = db.Name
	set.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
	set.Spec.Template.Labels = labels
	set.Spec.Template.Spec.Containers = []corev1.Container{{
		Name:         "db",
		Image:        db.Spec.Image,
		Ports:        []corev1.ContainerPort{{Name: "db", ContainerPort: 5432, Protocol: corev1.ProtocolTCP}},
		VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/db"}},
	}}
	set.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(db.Spec.Storage)},
			},
		},
	}}
}

// setServiceSpec makes service the headless Service that names each of db's pods.
func setServiceSpec(service *corev1.Service, db *Database) {
	service.Spec.ClusterIP = corev1.ClusterIPNone
	service.Spec.Selector = map[string]string{"app.kubernetes.io/name": db.Name}
	service.Spec.Ports = []corev1.ServicePort{{Name: "db", Port: 5432, Protocol: corev1.ProtocolTCP}}
}
