# Source me: keep DDS on this machine (loopback only) with a domain of our own, unless the caller set one.
export ROS_AUTOMATIC_DISCOVERY_RANGE=${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}
export ROS_LOCALHOST_ONLY=${ROS_LOCALHOST_ONLY:-1}
export ROS_DOMAIN_ID=${ROS_DOMAIN_ID:-$(( ($$ % 100) + 101 ))}
export RMW_IMPLEMENTATION=${RMW_IMPLEMENTATION:-rmw_fastrtps_cpp}
