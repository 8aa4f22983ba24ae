// The admin endpoint arrives with the dashboards issue.
namespace netbox::dashboards {}
