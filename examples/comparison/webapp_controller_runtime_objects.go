// The objects the controller-runtime WebApp owns, spelled out as in webapp_objects.rs: the same in
// any framework, so not counted. Not compiled here, like webapp_controller_runtime.go.
package main

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// setDeploymentSpec makes deployment run app's image, sized from its spec.
func setDeploymentSpec(deployment *appsv1.Deployment, app *WebApp) {
	labels := map[string]string{"app.kubernetes.io/name": app.Name}
	deployment.Labels = labels
	deployment.Spec.Replicas = ptr.To(app.Spec.Replicas)
	deployment.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
	deployment.Spec.Template.Labels = labels
	deployment.Spec.Template.Spec.Containers = []corev1.Container{{
		Name:  "web",
		Image: app.Spec.Image,
		Ports: []corev1.ContainerPort{{ContainerPort: app.Spec.Port, Protocol: corev1.ProtocolTCP}},
	}}
}

// setServiceSpec puts service in front of app's pods.
func setServiceSpec(service *corev1.Service, app *WebApp) {
	service.Spec.Selector = map[string]string{"app.kubernetes.io/name": app.Name}
	service.Spec.Ports = []corev1.ServicePort{{
		Port:       80,
		TargetPort: intstr.FromInt32(app.Spec.Port),
		Protocol:   corev1.ProtocolTCP,
	}}
}
